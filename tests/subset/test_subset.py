"""Chapter 2: every variant of every backend against the itertools reference, plus the
combinatorics (hypothesis), the memory limits, and a search beyond 2**32 subsets."""

import math
import re
from itertools import combinations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from numba import cuda

import gpulab.subset as ss
from gpulab.errors import BackendUnavailable, DtypeError, GpulabError, LimitError, ShapeError
from gpulab.subset import host
from gpulab.subset.combinatorics import UINT64_MAX
from gpulab.subset.reference import least_correlated_cpu, result_from, scan_chunk
from gpulab.subset.variants import REGISTRY
from tests.conftest import ON_SIMULATOR, device_only, from_gpu, gpu_library, on_gpu, skip_unless_runnable

# (n, k): k = 1, k = n, k = n - 1, primes, a few partitions and chunks deep.
SIM_SIZES = [(1, 1), (6, 1), (7, 2), (8, 8), (9, 8), (11, 3), (10, 5)]
GPU_SIZES = SIM_SIZES + [(17, 16), (16, 16), (20, 5), (31, 4), (50, 3), (30, 5), (60, 2)]
SIZES = SIM_SIZES if ON_SIMULATOR else GPU_SIZES
# Small partitions/chunks/grids so that the partition loops and grid-stride loops turn several times.
SMALL = dict(PARTITION=13, CHUNK=5, MAX_BLOCKS=2)


def random_corr(rng, n, T=None):
    return ss.correlation(rng.standard_normal((T or max(n + 3, 12), n)))


def assert_same(result, ref, what):
    assert result.rank == ref.rank and result.combination == ref.combination, f"{what}: {result} != {ref}"
    assert math.isclose(result.distance, ref.distance, rel_tol=1e-9, abs_tol=1e-300), f"{what}: {result} != {ref}"


CASES = [pytest.param(v, nk, id=f"{v.key}-n{nk[0]}k{nk[1]}") for v in REGISTRY for nk in SIZES]


@pytest.mark.parametrize("variant,nk", CASES)
def test_variant_matches_reference(variant, nk, rng):
    skip_unless_runnable(variant)
    n, k = nk
    C = random_corr(rng, n)
    ref = ss.least_correlated_reference(C, k)
    got = ss.least_correlated(C, k, variant=variant.name, backend=variant.backend)
    assert_same(got, ref, variant.key)
    if variant.backend != "cpu":
        got = ss.least_correlated(C, k, variant=variant.name, backend=variant.backend, params=SMALL)
        assert_same(got, ref, f"{variant.key} with {SMALL}")


@pytest.mark.parametrize("variant", [v for v in REGISTRY if v.backend != "cpu"], ids=lambda v: v.key)
def test_ties_go_to_the_lowest_rank(variant):
    """Equal off-diagonal correlations: every subset has the same distance; rank 0 must win."""
    skip_unless_runnable(variant)
    n, k = 9, 3
    C = np.full((n, n), 0.3)
    np.fill_diagonal(C, 1.0)
    got = ss.least_correlated(C, k, variant=variant.name, backend=variant.backend, params=SMALL)
    assert got.rank == 0 and got.combination == (0, 1, 2)
    assert math.isclose(got.distance, math.sqrt(6 * 0.09), rel_tol=1e-12)


def test_packed_distance_is_the_frobenius_norm(rng):
    C = random_corr(rng, 12)
    ref = ss.least_correlated_reference(C, 4)
    assert math.isclose(ss.frobenius_distance(C, ref.combination), ref.distance, rel_tol=1e-12)
    # and no subset is closer, by the obvious numpy computation
    others = [ss.frobenius_distance(C, c) for c in combinations(range(12), 4)]
    assert min(others) >= ref.distance * (1 - 1e-12)


# ----------------------------------------------------------------------------- memory limits


def _limit_case(variant):
    block = host.geometry(variant.launch_params())[0]
    if variant.policy.q_in == "constant":
        return host.max_n_constant(), "65536 bytes"
    if variant.policy.q_in == "shared":
        k = 1 if (ON_SIMULATOR and variant.name == "shared") else 2
        return host.max_n_shared(variant.policy, k, block), "shared memory per block"
    return None, None


LIMITED = [v for v in REGISTRY if v.name in ("shared", "constant_local", "incremental", "incremental_warp",
                                             "incremental_lanes")]


@pytest.mark.parametrize("variant", LIMITED, ids=lambda v: v.key)
def test_n_at_the_memory_limit_and_one_past(variant, rng):
    skip_unless_runnable(variant)
    n, pattern = _limit_case(variant)
    k = 1 if (ON_SIMULATOR and variant.name == "shared") else 2
    C = random_corr(rng, n, T=20)
    got = ss.least_correlated(C, k, variant=variant.name, backend=variant.backend)
    assert_same(got, ss.least_correlated_reference(C, k), f"{variant.key} n={n}")
    C2 = random_corr(rng, n + 1, T=20)
    with pytest.raises(LimitError, match=pattern):
        ss.least_correlated(C2, k, variant=variant.name, backend=variant.backend)


def test_limits_are_those_of_the_h200():
    assert host.max_n_constant() == 128  # 128*127/2*8 = 65024 bytes; 129 -> 66048
    policy = REGISTRY.get("incremental", "numba").policy
    assert host.max_n_shared(policy, 2, 512) >= 200  # C(200, 5) fits the incremental kernels


# ----------------------------------------------------------------------------- beyond 2**32


def test_partition_beyond_2_32_on_device(rng):
    """The device unrank and incremental scan at ranks above 2**32 (C(64, 8) = 4.4e9 subsets),
    on a short chunk near the end, against the CPU's unrank + sum."""
    n, k = 64, 8
    total = ss.choose(n, k)
    assert total > 2**32
    C = random_corr(rng, n, T=80)
    Q = ss.squared_packed(C)
    T = ss.binomial_table(n, k)
    start, count = total - 40, 40  # crosses several "last index" wraps
    from gpulab.subset.kernels_numba import RANK_NONE, scan_dev

    @cuda.jit
    def probe(Q, T, start, count, out_v, out_r, out_c):
        c = cuda.local.array(8, np.int32)
        P = cuda.local.array(8, np.float64)
        s, r = scan_dev(Q, T, 64, 8, start, count, c, P)
        out_v[0] = s
        out_r[0] = r
        for i in range(8):
            out_c[i] = c[i]

    out_v, out_r = cuda.to_device(np.full(1, np.nan)), cuda.to_device(np.full(1, RANK_NONE))
    out_c = cuda.to_device(np.full(8, -1, np.int32))
    probe[1, 1](cuda.to_device(Q), cuda.to_device(T), np.uint64(start), np.uint64(count), out_v, out_r, out_c)
    from gpulab.subset.reference import subset_sum

    sums = [subset_sum(Q, ss.unrank(n, k, m)) for m in range(start, total)]
    i = int(np.argmin(sums))
    assert out_r.copy_to_host()[0] == start + i
    assert out_v.copy_to_host()[0] == sums[i]
    assert tuple(out_c.copy_to_host()) == ss.unrank(n, k, total - 1)  # the walk ended on the last subset


@pytest.mark.skipif(ON_SIMULATOR, reason="4.4e9 subsets: GPU only (the simulator checks the partition logic above)")
@pytest.mark.parametrize("variant", [v for v in REGISTRY if v.backend != "cpu" and v.name != "global"], ids=lambda v: v.key)
def test_more_than_2_32_subsets_planted(variant, rng):
    """C(64, 8) = 4,426,165,368 subsets: a planted optimum, checked against the CPU baseline."""
    skip_unless_runnable(variant)
    n, k = 64, 8
    planted = (30, 35, 40, 45, 50, 55, 60, 63)  # lexicographic rank above 2**32
    A = 0.3 + 0.2 * rng.random((n, n))  # every pair clearly correlated ...
    for a in planted:
        for b in planted:
            A[a, b] = 0.02 * rng.random()  # ... except the planted ones
    C = np.tril(A, -1) + np.tril(A, -1).T + np.eye(n)
    assert ss.rank(n, k, planted) > 2**32
    s, r = least_correlated_cpu(ss.squared_packed(C), n, k)
    cpu = result_from(n, k, s, r)
    assert cpu.combination == planted
    got = ss.least_correlated(C, k, variant=variant.name, backend=variant.backend)
    assert_same(got, cpu, variant.key)


# ----------------------------------------------------------------------------- combinatorics


def test_choose_small_and_known_values():
    assert [ss.choose(5, k) for k in range(7)] == [1, 5, 10, 10, 5, 1, 0]
    assert ss.choose(50, 5) == 2_118_760 and ss.choose(200, 5) == 2_535_650_040
    assert ss.choose(50, 10) == 10_272_278_170
    assert ss.choose(67, 33) == math.comb(67, 33)  # 1.42e19 < 2**64: the intermediates must not overflow


def test_choose_overflow_is_a_clear_error():
    assert math.comb(68, 34) > UINT64_MAX
    with pytest.raises(LimitError, match="does not fit in 64 bits"):
        ss.choose(68, 34)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 70).flatmap(lambda n: st.tuples(st.just(n), st.integers(0, n))))
def test_choose_is_math_comb_or_raises(nk):
    n, k = nk
    if math.comb(n, k) > UINT64_MAX:
        with pytest.raises(LimitError):
            ss.choose(n, k)
    else:
        assert ss.choose(n, k) == math.comb(n, k)


@st.composite
def rank_cases(draw):
    n = draw(st.integers(1, 200))
    k = draw(st.integers(1, min(n, 12)))
    m = draw(st.integers(0, math.comb(n, k) - 1))
    return n, k, m


@settings(max_examples=300, deadline=None)
@given(rank_cases())
def test_unrank_rank_round_trip(case):
    n, k, m = case
    c = ss.unrank(n, k, m)
    assert len(c) == k and all(0 <= x < n for x in c) and all(a < b for a, b in zip(c, c[1:]))
    assert ss.rank(n, k, c) == m
    if m + 1 < math.comb(n, k):
        assert ss.unrank(n, k, m + 1) > c  # lexicographic order


def test_unrank_worked_example_n5_k3():
    assert [ss.unrank(5, 3, m) for m in range(10)] == list(combinations(range(5), 3))
    assert ss.unrank(5, 3, 7) == (1, 2, 4)


def test_unrank_rejects_out_of_range():
    with pytest.raises(LimitError, match=r"outside \[0, C\(5, 3\) = 10\)"):
        ss.unrank(5, 3, 10)


def test_packed_offsets():
    C = np.arange(25, dtype=float).reshape(5, 5)
    P = ss.pack(C)
    assert P.size == 10
    for i in range(5):
        for j in range(i):
            assert P[ss.offset(i, j)] == C[i, j] and ss.offset(i, j) == i * (i - 1) // 2 + j
    assert list(ss.gather(P, (0, 2, 4))) == [C[2, 0], C[4, 0], C[4, 2]]


# ----------------------------------------------------------------------------- data


def test_correlation_synthetic_and_csv(tmp_path):
    R = ss.synthetic_returns(300, 6, factors=1, strength=0.9, planted=(1, 4), seed=7)
    C = ss.correlation(R)
    assert C.shape == (6, 6) and np.array_equal(C, C.T) and np.all(np.diag(C) == 1.0)
    assert np.allclose(C, np.corrcoef(R, rowvar=False), atol=1e-12)
    assert abs(C[1, 4]) < 0.2 and C[0, 2] > 0.3  # planted strategies are uncorrelated, the others are not
    assert ss.synthetic_returns(10, 3, seed=1).tolist() == ss.synthetic_returns(10, 3, seed=1).tolist()
    path = tmp_path / "r.csv"
    np.savetxt(path, R, delimiter=",", header="a,b,c,d,e,f", comments="")
    R2, names = ss.load_returns_csv(path)
    assert names == list("abcdef") and np.allclose(R2, R)
    np.savetxt(path, R, delimiter=",")
    R3, names = ss.load_returns_csv(path)
    assert names[0] == "s0" and np.allclose(R3, R)


def test_correlation_rejects_constant_strategy(rng):
    R = rng.standard_normal((10, 3))
    R[:, 1] = 0.5
    with pytest.raises(ShapeError, match=r"zero variance"):
        ss.correlation(R)


# ----------------------------------------------------------------------------- bad input


def _eye(n):
    return np.eye(n)


@pytest.mark.parametrize("C,k,error,pattern", [
    (np.ones((3, 4)), 2, ShapeError, "square"),
    (np.ones(3), 1, ShapeError, "square"),
    ([[1.0]], 1, ShapeError, "numpy array"),
    (np.zeros((0, 0)), 1, ShapeError, "empty"),
    (np.array([[1.0, 0.2], [0.3, 1.0]]), 1, ShapeError, "not symmetric"),
    (np.array([[1.0, 0.2], [0.2, 0.9]]), 1, ShapeError, "unit diagonal"),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), 1, ShapeError, "NaN"),
    (np.array([["a"]]), 1, DtypeError, "dtype"),
    (_eye(4), 0, LimitError, r"1 <= k <= n = 4"),
    (_eye(4), 5, LimitError, r"1 <= k <= n = 4"),
    (_eye(4), 2.0, DtypeError, "integer"),
    (_eye(70), 35, LimitError, "64 bits"),
])
def test_bad_input_is_rejected_clearly(C, k, error, pattern):
    with pytest.raises(error, match=pattern):
        ss.least_correlated(C, k)


def test_k_over_the_gpu_limit_names_it():
    with pytest.raises(LimitError, match="MAX_K = 16"):
        ss.least_correlated(np.eye(20), 17, variant="global")
    # the CPU baseline has no such limit
    assert ss.least_correlated(np.eye(18), 17, variant="cpu_parallel", backend="cpu").rank == 0


def test_unknown_variant_lists_the_known_ones():
    with pytest.raises(Exception, match="known: global"):
        ss.least_correlated(np.eye(3), 2, variant="fastest")


@pytest.mark.skipif(not ON_SIMULATOR, reason="only on the simulator is the CUDA C backend certainly absent")
def test_cuda_c_on_simulator_says_why():
    with pytest.raises(BackendUnavailable, match="real GPU"):
        ss.least_correlated(np.eye(3), 2, variant="shared", backend="cuda-c")


def test_every_ladder_step_has_both_backends():
    assert set(REGISTRY.names("numba")) == set(REGISTRY.names("cuda-c")) == {
        "global", "shared", "constant_local", "incremental", "incremental_warp", "incremental_global",
        "incremental_lanes"}
    assert set(REGISTRY.names("cpu")) == {"cpu_parallel", "reference"}


def test_scan_chunk_cpu_matches_reference_on_every_chunking(rng):
    """The CPU scan (also the GPU incremental kernels' device function) on every chunk size."""
    n, k = 9, 4
    C = random_corr(rng, n)
    ref = ss.least_correlated_reference(C, k)
    Q = ss.squared_packed(C)
    for chunk in (1, 2, 7, 126, 1000):
        s, r = least_correlated_cpu(Q, n, k, chunk=chunk)
        assert_same(result_from(n, k, s, r), ref, f"chunk={chunk}")
    assert scan_chunk is not None


# ----------------------------------------------------------------------------- device arrays in


@pytest.mark.parametrize("variant", [v for v in REGISTRY if v.name != "reference"], ids=lambda v: v.key)
def test_device_input_gives_the_same_answer(variant, rng):
    """A correlation matrix on the device (its host copies refused): validated and packed there,
    the same answer as from numpy, with the host partition loops turning several times."""
    skip_unless_runnable(variant)
    n, k = (9, 4)
    C = random_corr(rng, n)
    ref = ss.least_correlated(C, k, variant=variant.name, backend=variant.backend)
    assert_same(ref, ss.least_correlated_reference(C, k), variant.key)
    got = ss.least_correlated(device_only(C), k, variant=variant.name, backend=variant.backend)
    assert got == ref, f"{variant.key}: {got} != {ref}"
    if variant.backend != "cpu":
        got = ss.least_correlated(device_only(C), k, variant=variant.name, backend=variant.backend, params=SMALL)
        assert got == ref, f"{variant.key} with {SMALL}"


def test_device_input_of_other_dtypes_and_n_1(rng):
    C = random_corr(rng, 7)
    ref = ss.least_correlated(C, 3)
    assert ss.least_correlated(device_only(C.astype(np.float32)), 3).combination == \
        ss.least_correlated(C.astype(np.float32), 3).combination
    assert ss.least_correlated(device_only(np.eye(1)), 1) == ss.least_correlated(np.eye(1), 1)
    assert ss.least_correlated(device_only(C), 3, variant="global") == ref


@pytest.mark.parametrize("C,k,error,pattern", [
    (np.ones((3, 4)), 2, ShapeError, "square"),
    (np.array([[1.0, 0.2], [0.3, 1.0]]), 1, ShapeError, r"not symmetric: max \|C - C.T\| = 0.1"),
    (np.array([[1.0, 0.2], [0.2, 0.9]]), 1, ShapeError, "unit diagonal"),
    (np.array([[1.0, np.nan], [np.nan, 1.0]]), 1, ShapeError, r"NaN or inf \(2 entries\)"),
    (np.array([[1.0, 0.0], [np.inf, 1.0]], np.float32), 1, ShapeError, r"NaN or inf \(1 entries\)"),
    (np.array([[True]]), 1, DtypeError, "dtype"),
    (_eye(4), 5, LimitError, r"1 <= k <= n = 4"),
])
def test_device_input_is_validated_on_the_device(C, k, error, pattern):
    with pytest.raises(error, match=pattern):
        ss.least_correlated(device_only(C), k)


def test_packing_and_correlation_on_the_device(rng):
    """The device helpers against the host ones: Q bit for bit; C to rounding, exactly symmetric."""
    R = rng.standard_normal((40, 11))
    C = ss.correlation(R)
    dC = ss.correlation(device_only(R))
    assert not isinstance(dC, np.ndarray)
    Ch = dC.copy_to_host()
    assert np.array_equal(Ch, Ch.T) and np.all(np.diag(Ch) == 1.0)
    assert np.abs(Ch - C).max() < 1e-13
    assert np.array_equal(ss.squared_packed(device_only(C)).copy_to_host(), ss.squared_packed(C))
    R[:, 3] = 0.25
    with pytest.raises(ShapeError, match=r"strategies \[3\] have zero variance"):
        ss.correlation(device_only(R))
    R[2, 1] = np.nan
    with pytest.raises(ShapeError, match="NaN or inf"):
        ss.correlation(device_only(R))


@pytest.mark.parametrize("lib_name", ["cupy", "torch"])
@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_cupy_and_torch_inputs(lib_name, backend, rng):
    """GPU only: the whole pipeline on the caller's arrays (returns → correlation → search)."""
    lib = gpu_library(lib_name)
    R = rng.standard_normal((300, 50))
    C = ss.correlation(R)
    dC = ss.correlation(on_gpu(lib, R))
    assert type(dC).__module__.split(".")[0] == lib_name
    assert np.abs(from_gpu(dC) - C).max() < 1e-13
    for v in REGISTRY.select(backend=backend):
        skip_unless_runnable(v)
        ref = ss.least_correlated(C, 4, variant=v.name, backend=backend)
        assert ss.least_correlated(on_gpu(lib, C), 4, variant=v.name, backend=backend) == ref, v.key
    with pytest.raises(ShapeError, match="not symmetric"):
        bad = C.copy()
        bad[0, 1] += 1e-6
        ss.least_correlated(on_gpu(lib, bad), 3, backend=backend)


@pytest.mark.parametrize("params,fragment", [
    (dict(block=32), "unknown parameter 'block' (parameter names are upper-case: 'BLOCK')"),
    (dict(BLOK=32), "unknown parameter 'BLOK'; known: BLOCK"),
    (dict(CHUNK=0), "CHUNK = 0 must be a whole number >= 1"),
    (dict(CHUNK=2.5), "CHUNK = 2.5 must be a whole number >= 1"),
    (dict(FINAL_BLOCK=48), "FINAL_BLOCK = 48 must be a power of two"),
    (dict(BLOCK=96), "BLOCK = 96 must be a power of two"),
    (dict(FINAL_BLOCK=2048), "exceeds the limit of 1024 threads per block"),
])
def test_a_mistyped_parameter_is_refused_not_ignored(params, fragment, rng):
    """A name this chapter does not know would be silently ignored, and a final block that is not
    a power of two would leave part of the argmin unread (a wrong answer): both are errors."""
    C = np.corrcoef(rng.normal(size=(6, 20)))
    with pytest.raises(GpulabError, match=re.escape(fragment)):
        ss.least_correlated(C, 3, params=params)
