"""Tests of the chapter 1 exercises (graded per exercise by `gpulab grade matmul`)."""

import numpy as np
import pytest
from numba import cuda

from gpulab.checking import float32_tolerance, poisoned, relative_error
from gpulab.errors import DtypeError, LimitError, ShapeError


@pytest.mark.exercise("matmul.1-matvec-constant")
@pytest.mark.parametrize("M,K", [(1, 1), (127, 3), (128, 64), (129, 200), (37, 16384)])
def test_matvec_matches_reference(impl, rng, M, K):
    mod = impl("matmul", "matvec_constant")
    A = rng.standard_normal((M, K), dtype=np.float32)
    x = rng.standard_normal(K, dtype=np.float32)
    y = mod.matvec(A, x, out=cuda.to_device(poisoned(M, np.float32)))
    assert relative_error(y, A.astype(np.float64) @ x) <= float32_tolerance(K)


@pytest.mark.exercise("matmul.1-matvec-constant")
def test_matvec_rejects_what_does_not_fit(impl):
    mod = impl("matmul", "matvec_constant")
    with pytest.raises(LimitError, match="65536"):
        mod.matvec(np.ones((2, 16385), np.float32), np.ones(16385, np.float32))
    with pytest.raises(ShapeError):
        mod.matvec(np.ones((2, 3), np.float32), np.ones(4, np.float32))
    with pytest.raises(DtypeError):
        mod.matvec(np.ones((2, 3)), np.ones(3))


@pytest.mark.exercise("matmul.2-transpose-shared")
@pytest.mark.parametrize("M,N", [(1, 1), (15, 16), (16, 17), (33, 5), (2, 47)])
def test_transpose_matches_reference(impl, rng, M, N):
    mod = impl("matmul", "transpose_shared")
    A = rng.standard_normal((M, N), dtype=np.float32)
    T = mod.transpose(A, out=cuda.to_device(poisoned((N, M), np.float32)))
    assert T.shape == (N, M) and np.array_equal(T, A.T)


@pytest.mark.exercise("matmul.2-transpose-shared")
def test_transpose_rejects_bad_input(impl):
    mod = impl("matmul", "transpose_shared")
    with pytest.raises(ShapeError):
        mod.transpose(np.ones(3, np.float32))
    with pytest.raises(DtypeError):
        mod.transpose(np.ones((3, 3)))


def traced_transpose(mod, rng):
    """Run `mod.transpose` on a 64×96 matrix under the memory tracer; return its kernels'
    reports (the result must be right too)."""
    from gpulab import trace

    A = rng.standard_normal((64, 96), dtype=np.float32)
    with trace.recording() as rec:
        T = mod.transpose(A)
    assert np.array_equal(T, A.T)
    return trace.merge(rec.reports)


@pytest.mark.exercise("matmul.2-transpose-shared")
def test_transpose_is_conflict_free_and_coalesced(impl, rng):
    from gpulab import device

    if not device.on_simulator():
        pytest.skip("the memory tracer runs only on numba's simulator (GPULAB_DEVICE=sim)")
    reports = traced_transpose(impl("matmul", "transpose_shared"), rng)
    shared = [r for r in reports if r.totals["shared_requests"]]
    assert shared, "no kernel used shared memory: stage the tile in cuda.shared.array"
    for r in reports:
        wf, ld, st = r.per_request("shared"), r.per_request("load"), r.per_request("store")
        assert wf is None or wf == 1, f"{r.kernel}: {wf:.3g} shared wavefronts per request (bank conflicts); want 1"
        assert ld is None or ld <= 4, f"{r.kernel}: {ld:.3g} global load sectors per request; want at most 4"
        assert st is None or st <= 4, f"{r.kernel}: {st:.3g} global store sectors per request; want at most 4"


@pytest.mark.exercise("matmul.3-rect-tiles")
@pytest.mark.parametrize("M,K,N", [(1, 1, 1), (16, 4, 8), (17, 5, 9), (15, 3, 7), (31, 13, 2)])
def test_rect_matches_reference(impl, rng, M, K, N):
    mod = impl("matmul", "rect_tiles")
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = mod.matmul_rect(A, B, out=cuda.to_device(poisoned((M, N), np.float32)))
    assert relative_error(C, A.astype(np.float64) @ B) <= float32_tolerance(K)


@pytest.mark.exercise("matmul.3-rect-tiles")
def test_rect_rejects_mismatched_shapes(impl):
    mod = impl("matmul", "rect_tiles")
    with pytest.raises(ShapeError, match="inner"):
        mod.matmul_rect(np.ones((2, 3), np.float32), np.ones((4, 2), np.float32))
