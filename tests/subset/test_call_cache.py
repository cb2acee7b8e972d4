"""Issue 31: the subset search keeps its plan (kernels, tables, buffers) per shape. A kept plan is
reused by the next call of that shape, never gives a stale answer for new data, another shape
makes its own, `clear_cache()` empties it, and bad input is refused before anything is kept."""

import math

import numpy as np
import pytest
from numba import cuda

import gpulab.subset as ss
from gpulab.errors import DtypeError, LimitError, ShapeError
from gpulab.subset import host
from gpulab.subset.variants import REGISTRY
from tests.conftest import skip_unless_runnable

GPU_VARIANTS = [v for v in REGISTRY if v.backend != "cpu"]


def planted(rng, n, k):
    """A correlation matrix whose least-correlated k-subset (2 <= k < 18) is one random subset
    S, by a wide margin: pairs inside S correlate at most 0.1, every other pair at least 0.3, so
    any other subset has a member outside S whose k-1 pairs add at least (k-1)·0.09, more than
    S's whole sum of at most C(k,2)·0.01. Returns `(C, S)`."""
    S = tuple(sorted(rng.choice(n, k, replace=False).tolist()))
    C = rng.uniform(0.3, 0.6, (n, n)) * rng.choice([-1.0, 1.0], (n, n))
    inside = np.zeros((n, n), bool)
    inside[np.ix_(S, S)] = True
    C[inside] = rng.uniform(-0.1, 0.1, inside.sum())
    C = np.triu(C, 1)
    C = C + C.T + np.eye(n)
    return C, S


def expect(C, S):
    """The answer for planted `S`, checked against the reference search."""
    ref = ss.least_correlated_reference(C, len(S))
    assert ref.combination == S  # the premise: S is the unique best
    return ref


def assert_same(got, ref, what):
    assert (got.combination, got.rank) == (ref.combination, ref.rank), f"{what}: {got} != {ref}"
    assert math.isclose(got.distance, ref.distance, rel_tol=1e-9), f"{what}: {got} != {ref}"


def two_problems(rng, n, k):
    """Two planted problems of one shape whose answers differ."""
    C1, S1 = planted(rng, n, k)
    while True:
        C2, S2 = planted(rng, n, k)
        if S2 != S1:
            return (C1, expect(C1, S1)), (C2, expect(C2, S2))


@pytest.fixture(autouse=True)
def empty_cache():
    ss.clear_cache()
    yield
    ss.clear_cache()


@pytest.mark.parametrize("variant", GPU_VARIANTS, ids=lambda v: v.key)
def test_the_same_shape_reuses_its_plan_and_new_data_gets_its_own_answer(variant, rng):
    skip_unless_runnable(variant)
    (C1, r1), (C2, r2) = two_problems(rng, 8, 3)
    assert_same(ss.least_correlated(C1, 3, variant=variant.name, backend=variant.backend), r1, "first call")
    [plan] = host.PLANS.values()
    assert_same(ss.least_correlated(C2, 3, variant=variant.name, backend=variant.backend), r2, "same shape, new data")
    assert list(host.PLANS.values()) == [plan]  # a hit: the plan was not made again
    assert_same(ss.least_correlated(C1, 3, variant=variant.name, backend=variant.backend), r1, "the first data again")


def test_another_shape_variant_or_parameters_makes_its_own_plan(rng):
    (C, r), _ = two_problems(rng, 8, 3)
    ss.least_correlated(C, 3, variant="incremental", backend="numba")
    ss.least_correlated(C, 3, variant="incremental", backend="numba")
    assert len(host.PLANS) == 1
    C4, S4 = planted(rng, 8, 4)
    assert_same(ss.least_correlated(C4, 4, variant="incremental", backend="numba"), expect(C4, S4), "k = 4")
    assert len(host.PLANS) == 2
    assert_same(ss.least_correlated(C, 3, variant="global", backend="numba"), r, "another variant")
    assert len(host.PLANS) == 3
    assert_same(ss.least_correlated(C, 3, variant="incremental", backend="numba", params={"CHUNK": 3}), r, "CHUNK = 3")
    assert len(host.PLANS) == 4
    ss.clear_cache()
    assert len(host.PLANS) == 0
    assert_same(ss.least_correlated(C, 3, variant="incremental", backend="numba"), r, "after clear_cache")
    assert len(host.PLANS) == 1


def test_launches_bound_to_different_data_keep_their_own_q(rng):
    """The benchmarks prepare `launch = v.run(Q, ...)` once and call it many times: two
    launches of one plan, bound to different Q, each search their own Q, in any order."""
    (C1, r1), (C2, r2) = two_problems(rng, 8, 3)
    for name in ("incremental", "shared", "constant_local"):
        v = REGISTRY.get(name, "numba")
        p = v.launch_params(None)
        first = v.run(ss.squared_packed(C1), 8, 3, p)
        second = v.run(ss.squared_packed(C2), 8, 3, p)
        assert second()[1] == r2.rank and first()[1] == r1.rank and second()[1] == r2.rank, name


def test_a_device_c_of_the_same_shape_is_searched_where_it_lies(rng):
    (C1, r1), (C2, r2) = two_problems(rng, 8, 3)
    for C, r in ((C1, r1), (C2, r2), (C1, r1)):
        assert_same(ss.least_correlated(cuda.to_device(C), 3, variant="incremental", backend="numba"), r, "device C")
    assert len(host.PLANS) == 1


def test_a_device_c_reuses_its_buffers_and_is_checked_every_time(rng):
    """A device C's checks and packing keep their buffers per n: a repeated call allocates
    nothing, Q is rewritten bit for bit for new data, and the three numbers are reset every
    call (a bad matrix after a good one is refused, a good one after a bad one accepted)."""
    host.clear_cache()
    try:
        n = 11
        (C1, r1), (C2, r2) = two_problems(rng, n, 3)
        bad = C2.copy()
        bad[4, 7] += 0.01  # asymmetric by 0.01
        Q1, _, _ = host.validated_packed_on_device(cuda.to_device(C1), 3)
        assert np.array_equal(Q1.copy_to_host(), ss.squared_packed(C1))
        with pytest.raises(ShapeError, match=r"not symmetric: max \|C - C.T\| = 0.01"):
            host.validated_packed_on_device(cuda.to_device(bad), 3)
        Q2, _, _ = host.validated_packed_on_device(cuda.to_device(C2), 3)
        assert Q2 is Q1 and len(host.DEVICE_INPUTS) == 1
        for good_after in (1, 2, 3):  # the two buffers of three numbers, each used again after a bad matrix
            with pytest.raises(ShapeError, match="not symmetric"):
                host.validated_packed_on_device(cuda.to_device(bad), 3)
            for _ in range(good_after):
                assert host.validated_packed_on_device(cuda.to_device(C2), 3)[0] is Q1
        assert np.array_equal(Q2.copy_to_host(), ss.squared_packed(C2))
        for C, r in ((C1, r1), (bad, None), (C2, r2)):
            if r is None:
                with pytest.raises(ShapeError, match="not symmetric"):
                    ss.least_correlated(cuda.to_device(C), 3, variant="incremental", backend="numba")
            else:
                assert_same(ss.least_correlated(cuda.to_device(C), 3, variant="incremental", backend="numba"), r, "device C")
        fresh = ss.squared_packed(cuda.to_device(C1))  # the public helper's Q is the caller's own
        assert fresh is not Q1 and np.array_equal(fresh.copy_to_host(), ss.squared_packed(C1))
    finally:
        host.clear_cache()
    assert len(host.DEVICE_INPUTS) == 0


def test_an_interrupted_check_leaves_no_stale_numbers(rng, monkeypatch):
    """A device C's check that fails in its launch (an interrupt, a launch error) must not leave
    a bad matrix's numbers for the next call to add to: a good matrix after it is accepted."""
    host.clear_cache()
    try:
        (C, r), _ = two_problems(rng, 9, 3)
        bad = C.copy()
        bad[2, 5] += 0.5
        with pytest.raises(ShapeError, match="not symmetric"):
            host.validated_packed_on_device(cuda.to_device(bad), 3)  # its numbers stay in one buffer
        real = host._check_and_pack

        def interrupted(*args):
            raise KeyboardInterrupt

        monkeypatch.setattr(host, "_check_and_pack", interrupted)
        with pytest.raises(KeyboardInterrupt):
            host.validated_packed_on_device(cuda.to_device(C), 3)
        monkeypatch.setattr(host, "_check_and_pack", real)
        for _ in range(2):  # both buffers, in turn
            assert_same(ss.least_correlated(cuda.to_device(C), 3, variant="incremental", backend="numba"), r, "after")
    finally:
        host.clear_cache()


def test_threads_checking_device_cs_of_one_n_get_their_own_q(rng, monkeypatch):
    """The kept Q of a device C is per thread: two threads checking matrices of one n at once
    (a Dask worker runs several tasks at once) never share one. The launch is left out
    (numba's simulator runs kernels from the main thread only); what is tested is whose
    buffers each call gets."""
    import threading

    monkeypatch.setattr(host, "_check_and_pack", lambda *args: None)
    C = cuda.to_device(planted(rng, 8, 3)[0])
    mine = host.validated_packed_on_device(C, 3)[0]
    got, barrier = [], threading.Barrier(2)

    def check():
        barrier.wait()
        got.append(host.validated_packed_on_device(C, 3)[0])

    threads = [threading.Thread(target=check) for _ in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(got) == 2 and len({id(q) for q in (mine, *got)}) == 3
    assert host.validated_packed_on_device(C, 3)[0] is mine


def test_equal_rank_ranges_share_one_plan(rng):
    """The CLI's chunks and distributed's tasks: ranges of one width, at different starts."""
    C, S = planted(rng, 8, 3)
    Q = ss.squared_packed(C)
    total = math.comb(8, 3)  # 56 = 15 + 15 + 15 + 11
    full = ss.search_packed(Q, 8, 3, "incremental", "numba")
    parts = [ss.search_packed(Q, 8, 3, "incremental", "numba", ranks=(a, min(a + 15, total))) for a in range(0, total, 15)]
    assert len(host.PLANS) == 3  # widths 56, 15 and 11
    assert min(parts)[1] == full[1] == ss.rank(8, 3, S)


def asymmetric(C):
    C = C.copy()
    C[0, 1] += 0.01
    return C


@pytest.mark.parametrize("call,error,pattern", [
    (lambda C: ss.least_correlated(asymmetric(C), 3, backend="numba"), ShapeError, "not symmetric"),
    (lambda C: ss.least_correlated(C, 9, backend="numba"), LimitError, r"1 <= k <= n = 8"),
    (lambda C: ss.least_correlated(C, 3.0, backend="numba"), DtypeError, "integer"),
    (lambda C: ss.least_correlated(C, 3, backend="numba", params={"BLOCK": 48}), LimitError, "power of two"),
    (lambda C: ss.least_correlated(C, 3, backend="numba", ranks=(5, 5)), LimitError, "non-empty range"),
    (lambda C: ss.least_correlated(np.eye(20), 17, variant="incremental", backend="numba"), LimitError, "MAX_K = 16"),
    (lambda C: ss.least_correlated(np.eye(129), 2, variant="constant_local", backend="numba"), LimitError,
     "does not fit constant memory"),
    (lambda C: ss.least_correlated(C, 3, backend="numba", params={"BLOCK": 16}), LimitError, "full warp"),
    (lambda C: ss.search_packed(np.zeros(5), 8, 3, "incremental", "numba"), ShapeError, r"n\(n-1\)/2 = 28"),
], ids=["asymmetric", "k>n", "k-float", "block-48", "empty-ranks", "k>MAX_K", "constant-n129", "block-16", "short-Q"])
def test_bad_input_is_one_clear_error_and_nothing_is_kept(call, error, pattern, rng):
    C, _ = planted(rng, 8, 3)
    with pytest.raises(error, match=pattern):
        call(C)
    assert len(host.PLANS) == 0


def test_each_thread_gets_its_own_plan():
    """A plan's buffers (Q, the blocks' answers) serve one search at a time: the same shape
    searched from another thread (a Dask worker runs several tasks at once) gets another plan."""
    import threading

    from gpulab.subset.variants import REGISTRY

    v = REGISTRY.get("incremental", "numba")
    host.clear_cache()
    try:
        mine = host.plan_for(v.policy, v.backend, 9, 3, v.launch_params(None))[0]
        assert host.plan_for(v.policy, v.backend, 9, 3, v.launch_params(None))[0] is mine
        theirs = []
        t = threading.Thread(target=lambda: theirs.append(host.plan_for(v.policy, v.backend, 9, 3, v.launch_params(None))[0]))
        t.start()
        t.join()
        assert theirs and theirs[0] is not mine and len(host.PLANS) == 2
    finally:
        host.clear_cache()


def test_a_device_q_of_the_wrong_length_or_dtype_is_refused():
    """`search_packed` on a device Q checks what the kernels will read (no out-of-bounds reads,
    no float32 bits read as float64)."""
    import gpulab.subset as ss
    from numba import cuda

    from gpulab.errors import DtypeError, ShapeError

    n, k = 9, 3
    good = np.random.default_rng(2).random(n * (n - 1) // 2)
    with pytest.raises(ShapeError, match="n = 9 packs n\\(n-1\\)/2 = 36"):
        ss.search_packed(cuda.to_device(good[:-1]), n, k, "incremental", "numba")
    with pytest.raises(DtypeError, match="float64"):
        ss.search_packed(cuda.to_device(good.astype(np.float32)), n, k, "incremental", "numba")
