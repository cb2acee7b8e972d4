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
