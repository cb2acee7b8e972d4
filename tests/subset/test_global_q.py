"""Issue 31: `incremental_global`, the incremental scan with Q read from global memory (no copy
into shared memory, so no shared-memory cap on n). Its answers against the reference on inputs
whose answer is unique, the default's switch to it where Q would not fit the device's shared
memory (a small limit, monkeypatched, so that small n are over it), its own limits, the CUDA C
loads (NVRTC's PTX), and the benchmark's C(300,5) case."""

import re

import numpy as np
import pytest

import gpulab.subset as ss
from gpulab import cudac, device
from gpulab.errors import GpulabError, LimitError
from gpulab.subset import bench, host
from gpulab.subset.combinatorics import choose
from gpulab.subset.variants import BEYOND_SHARED, REGISTRY, default_backend, default_choice, lanes_instead
from tests.conftest import ON_SIMULATOR, skip_unless_runnable
from tests.subset.test_call_cache import assert_same, expect, planted

NAME = "incremental_global"
VARIANTS = [REGISTRY.get(NAME, b) for b in ("numba", "cuda-c")]
# small chunks and grids: the grid-stride loop over chunks and the scan's wraps turn several times
SMALL = dict(CHUNK=5, MAX_BLOCKS=2)


@pytest.fixture(autouse=True)
def empty_cache():
    ss.clear_cache()
    yield
    ss.clear_cache()


def test_it_is_the_constant_one_named_beyond_the_shared_cap():
    assert BEYOND_SHARED == NAME
    for v in VARIANTS:
        assert v.policy.q_in == "global" and v.policy.chunked and v.policy.compares_sums
        # the argmin's 16 bytes per thread, whatever n: nothing of Q in shared memory
        assert host.shared_bytes(v.policy, 4000, 5, 512) == host.shared_bytes(v.policy, 10, 5, 512) == 16 * 512


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.key)
@pytest.mark.parametrize("n,k", [(9, 3), (11, 4), (8, 2), (7, 7)])
def test_planted_answers(variant, n, k, rng):
    skip_unless_runnable(variant)
    C, S = planted(rng, n, k)
    ref = expect(C, S)
    for params in (None, SMALL):
        got = ss.least_correlated(C, k, variant=NAME, backend=variant.backend, params=params)
        assert_same(got, ref, f"{variant.key} n={n} k={k} params={params}")


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.key)
def test_k_1_and_a_rank_range_agree_with_incremental(variant, rng):
    """k = 1 (every subset at distance 0: rank 0 wins) and a part of the ranks, against the
    shared-memory incremental of the same backend (the same scan, Q read from shared memory)."""
    skip_unless_runnable(variant)
    C, _ = planted(rng, 10, 3)
    assert ss.least_correlated(C, 1, variant=NAME, backend=variant.backend).rank == 0
    Q = ss.squared_packed(C)
    ranks = (17, 97)
    got = ss.search_packed(Q, 10, 3, NAME, variant.backend, SMALL, ranks)
    assert got == ss.search_packed(Q, 10, 3, "incremental", variant.backend, SMALL, ranks)
    assert ranks[0] <= got[1] < ranks[1]


def small_shared_limit(monkeypatch, n_fits: int, k: int, backend: str) -> None:
    """This device's shared memory per block made just enough for incremental's layout at
    `n_fits` (with its launch parameters here): n_fits + 1 is over it. (`SHARED_EVERYWHERE`,
    the 48 KiB that lets a default skip asking the device, goes to 0 with it.)"""
    v = REGISTRY.get("incremental", backend)
    limit = host.shared_bytes(v.policy, n_fits, k, host.geometry(v.launch_params())[0])
    monkeypatch.setattr(host, "SHARED_EVERYWHERE", 0)
    monkeypatch.setattr(host, "shared_limit", lambda: limit)
    assert host.max_n_shared(v.policy, k, host.geometry(v.launch_params())[0]) == n_fits


@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_a_backend_alone_switches_to_it_above_the_shared_limit(monkeypatch, backend, rng):
    skip_unless_runnable(REGISTRY.get(NAME, backend))
    k = 3
    small_shared_limit(monkeypatch, 9, k, backend)
    assert default_choice(9, k, None, backend) == ("incremental", backend)
    assert default_choice(10, k, None, backend) == (NAME, backend)
    C, S = planted(rng, 10, k)
    assert_same(ss.least_correlated(C, k, backend=backend), expect(C, S), f"{backend}, n over the limit")
    # a variant the caller names is never replaced: over the limit it fails, naming shared memory
    with pytest.raises(LimitError, match="shared memory per block.* the variant incremental_global"):
        ss.least_correlated(C, k, variant="incremental", backend=backend)


def test_no_backend_switches_to_it_above_the_shared_limit(monkeypatch, rng):
    """Where the default backend's choice keeps Q in shared memory (numba: always; CUDA C:
    above FASTEST's constant-memory row, so not at these sizes, which it gives constant_local)."""
    backend = default_backend()
    k = 3
    small_shared_limit(monkeypatch, 9, k, "numba")
    C, S = planted(rng, 10, k)
    variant, chosen = default_choice(10, k)
    assert chosen == backend
    if backend == "numba":
        assert variant == NAME
    else:
        assert variant == "constant_local"
    assert_same(ss.least_correlated(C, k), expect(C, S), f"default {variant}[{chosen}]")


def test_on_an_h200_the_switch_is_at_n_237(monkeypatch):
    """A GPU with CUDA C (emulated: nothing runs) and the H200's 227 KiB per block: the
    table's incremental (at k = 5 and n >= 164 its lanes form, whose layout is the same) up to
    n = 237 (512-thread blocks), incremental_global from 238."""
    monkeypatch.setattr(device, "on_simulator", lambda: False)
    monkeypatch.setattr(cudac, "unavailable_reason", lambda: None)
    monkeypatch.setattr(host, "shared_limit", lambda: 227 * 1024)
    assert default_choice(237, 5) == ("incremental_lanes", "cuda-c")
    assert default_choice(238, 5) == (NAME, "cuda-c")
    assert default_choice(300, 5) == (NAME, "cuda-c")
    assert default_choice(300, 5, None, "numba") == (NAME, "numba")
    assert default_choice(300, 5, "incremental_warp") == ("incremental_warp", "cuda-c")  # named: kept
    assert default_choice(200, 2) == ("incremental", "cuda-c")  # few subsets, n > 128: the table's, no switch


def test_a_dask_client_chooses_without_asking_the_device(monkeypatch):
    """`limit=SM90_SHARED_OPTIN` (the subset CLI on a cluster, and `check` on a GPU) never reads the
    device's limits (that would open a CUDA context on a worker's GPU); it takes sm_90's 227 KiB,
    so it switches where an H100 or H200 would."""
    monkeypatch.setattr(device, "on_simulator", lambda: False)
    monkeypatch.setattr(cudac, "unavailable_reason", lambda: None)

    def asked():
        raise AssertionError("the device was asked")

    monkeypatch.setattr(host, "shared_limit", asked)
    sm90 = host.SM90_SHARED_OPTIN
    assert default_choice(237, 5, limit=sm90) == ("incremental_lanes", "cuda-c")
    assert default_choice(238, 5, limit=sm90) == (NAME, "cuda-c")
    assert default_choice(300, 5, None, "numba", limit=sm90) == (NAME, "numba")
    C = np.corrcoef(np.random.default_rng(0).standard_normal((238, 12)))
    assert ss.check(C, 5)[1:] == (238, 5)  # check on a GPU: no device asked either
    with pytest.raises(AssertionError, match="asked"):
        default_choice(238, 5)


def test_a_given_limit_replaces_the_device_and_sm90(monkeypatch, rng):
    """`limit=` (a Dask client passes its workers' smallest shared memory per block): an n that
    fits sm_90's 227 KiB but not a smaller GPU's gets the global-memory variant, without asking
    the device; a named variant is never replaced."""
    monkeypatch.setattr(device, "on_simulator", lambda: False)
    monkeypatch.setattr(cudac, "unavailable_reason", lambda: None)
    monkeypatch.setattr(host, "shared_limit", lambda: (_ for _ in ()).throw(AssertionError("the device was asked")))
    inc = REGISTRY.get("incremental", "cuda-c")
    block = host.geometry(inc.launch_params())[0]
    small = int(rng.integers(96, 164)) * 1024  # a GPU with less than sm_90's 227 KiB (an A100 opts in to 163 KiB)
    n = next(n for n in range(2, 238) if host.shared_bytes(inc.policy, n, 5, block) > small)
    assert host.shared_bytes(inc.policy, n, 5, block) <= host.SM90_SHARED_OPTIN  # the premise: sm_90 takes it
    shared_default = {m: "incremental_lanes" if lanes_instead(m, 5) else "incremental" for m in (n - 1, n)}
    assert default_choice(n, 5, limit=host.SM90_SHARED_OPTIN) == (shared_default[n], "cuda-c")
    assert default_choice(n, 5, limit=small) == (NAME, "cuda-c")
    assert default_choice(n - 1, 5, limit=small) == (shared_default[n - 1], "cuda-c")
    assert default_choice(n, 5, None, "numba", limit=small) == (NAME, "numba")
    assert default_choice(n, 5, "incremental", limit=small) == ("incremental", "cuda-c")  # named: kept


# ----------------------------------------------------------------------------- limits


def test_n_300_passes_its_checks_where_shared_memory_fails(rng):
    """The simulator's limits are the H200's (227 KiB): Q of n = 300 (358,800 bytes) fits no
    block, so incremental is refused and incremental_global is not."""
    if not ON_SIMULATOR:
        pytest.skip("ss.check reads the shared-memory limit only on the simulator (the H200's)")
    C = ss.correlation(rng.standard_normal((310, 300)))
    with pytest.raises(LimitError, match="shared memory"):
        ss.check(C, 5, variant="incremental", backend="numba")
    _, n, k = ss.check(C, 5, variant=NAME, backend="numba")
    assert (n, k) == (300, 5)


def test_its_limits_are_named():
    """n <= MAX_N (32-bit packed offsets), k <= MAX_K, C(n, k) in 64 bits, the chunk count in a
    signed 64-bit int: each a LimitError that names it."""
    n = host.MAX_N + 1
    with pytest.raises(LimitError, match=f"MAX_N = {host.MAX_N}"):
        ss.search_packed(np.zeros(host.npairs(n)), n, 2, NAME, "numba")
    with pytest.raises(LimitError, match=f"MAX_K = {host.MAX_K}"):
        ss.search_packed(np.zeros(host.npairs(40)), 40, host.MAX_K + 1, NAME, "numba")
    with pytest.raises(LimitError, match="64 bits"):
        ss.search_packed(np.zeros(host.npairs(200)), 200, 16, NAME, "numba")
    # 2**63 < C(112, 16) < 2**64: in chunks of one rank, more chunks than a signed 64-bit count
    assert 2**63 < choose(112, 16) < 2**64
    with pytest.raises(LimitError, match="chunk count"):
        ss.search_packed(np.zeros(host.npairs(112)), 112, 16, NAME, "numba", params=dict(CHUNK=1))


# ----------------------------------------------------------------------------- the CUDA C loads


def cuda_c_ptx(defines: dict) -> str:
    nvrtc = pytest.importorskip("cuda.bindings.nvrtc")
    from gpulab.cudac import _include_dirs, define_flags, source_text

    src = source_text("gpulab.subset", host.SOURCE)
    err, prog = nvrtc.nvrtcCreateProgram(src.encode(), b"kernels.cu", 0, [], [])
    opts = ["--gpu-architecture=compute_90", "-std=c++17"] + define_flags(defines) + [f"-I{d}" for d in _include_dirs()]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
    assert err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    _, size = nvrtc.nvrtcGetPTXSize(prog)
    buf = bytes(size)
    nvrtc.nvrtcGetPTX(prog, buf)
    nvrtc.nvrtcDestroyProgram(prog)
    return buf.decode()


def entry(ptx: str, name: str) -> str:
    body = ptx.split(f".entry {name}(")
    assert len(body) == 2, f"no kernel {name} in the PTX"
    return body[1].split(".entry ")[0]


def count(body: str, op: str) -> int:
    return len(re.findall(r"\b" + re.escape(op) + r"\.f64\b", body))


def test_cuda_c_reads_q_through_the_read_only_cache():
    """NVRTC's PTX at k = 5: incremental_global loads its doubles (Q) with ld.global.nc (__ldg)
    and none from shared memory but the argmin's; incremental loads Q from shared memory."""
    ptx = cuda_c_ptx({"SUBSET_K": 5})
    glob, shared = entry(ptx, "subset_incremental_global"), entry(ptx, "subset_incremental")
    assert count(glob, "ld.global.nc") >= 4 + 4  # at least the hot loop's k-1 and a prefix's
    assert count(shared, "ld.global.nc") < count(glob, "ld.global.nc")
    assert count(shared, "ld.shared") > count(glob, "ld.shared") + 4
    # the argmin: the same tree reduction in both (and the only shared loads of the global one)
    assert count(glob, "ld.shared") == count(entry(ptx, "final_argmin"), "ld.shared")


# ----------------------------------------------------------------------------- the benchmark


def test_bench_has_c_300_5_and_what_runs_it(monkeypatch):
    monkeypatch.setattr(device, "on_simulator", lambda: False)
    cases = {c.label: c for c in bench.cases(False)}
    big = cases["C(300,5)"]
    assert big.size == {"n": 300, "k": 5, "subsets": choose(300, 5)} and choose(300, 5) == 19_582_837_560
    assert "C(300,5)" not in {c.label for c in bench.cases(True)}
    # past C(200,5): the CPU baseline and cpu_parallel timed once; the teaching step not run
    assert bench.peer_timing(big) == (0, 1) and bench.peer_timing(cases["C(200,5)"]) is None
    assert bench.repeats(REGISTRY.get("cpu_parallel", "cpu"), big) == (0, 1)
    assert bench.repeats(REGISTRY.get(NAME, "cuda-c"), big) is None
    with pytest.raises(GpulabError, match="teaching step global"):
        bench.runner(REGISTRY.get("global", "cuda-c"), {"n": 300, "k": 5, "launch": {}})
    # Q of n = 300 fits no H200 block (227 KiB): the shared-memory variants are over it
    inc = REGISTRY.get("incremental", "cuda-c")
    assert not host.fits_shared(inc.policy, 300, 5, inc.launch_params(), limit=host.SM90_SHARED_OPTIN)
    assert host.fits_shared(inc.policy, 237, 5, inc.launch_params(), limit=host.SM90_SHARED_OPTIN)
