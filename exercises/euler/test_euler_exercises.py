"""Tests of the chapter 5 exercises (graded per exercise by `gpulab grade euler`)."""

import sys

import numpy as np
import pytest
from numba import cuda

import gpulab.euler as eu
from gpulab.checking import poisoned
from gpulab.euler import generators as gen
from gpulab.euler import reference as ref

sys.setswitchinterval(0.001)  # simulated warp intrinsics wait on the GIL (see tests/euler/conftest.py)


def closed_walks(rng, n_vertices, n_walks, max_len):
    walks = [list(rng.permutation(n_vertices))]
    for _ in range(n_walks):
        walks.append(list(rng.integers(0, n_vertices, rng.integers(1, max_len + 1))))
    return gen.from_cycles(walks, rng)


@pytest.mark.exercise("euler.1-path-from-circuit")
@pytest.mark.parametrize("size", [1, 3, 8])
def test_euler_path(impl, rng, size):
    mod = impl("euler", "path_from_circuit")
    src, dst = closed_walks(rng, 5, size, 5)
    k = int(np.nonzero(src != dst)[0][0])
    ps, pd = np.delete(src, k), np.delete(dst, k)
    assert mod.unbalanced(ps, pd) == (int(dst[k]), int(src[k]))
    path = mod.euler_path(ps, pd)
    ok, why = ref.check_circuit(ps, pd, path, path=True, source=int(dst[k]))
    assert ok, why


@pytest.mark.exercise("euler.1-path-from-circuit")
def test_no_path(impl):
    mod = impl("euler", "path_from_circuit")
    with pytest.raises(eu.NotEulerian):
        mod.unbalanced(np.array([0, 1, 2]), np.array([1, 2, 0]))  # balanced: a circuit
    with pytest.raises(eu.NotEulerian):
        mod.unbalanced(np.array([0, 0, 1]), np.array([1, 2, 3]))  # four unbalanced vertices


@pytest.mark.exercise("euler.2-list-ranking")
@pytest.mark.parametrize("n", [1, 2, 31, 32, 33, 257])
def test_list_rank(impl, rng, n):
    mod = impl("euler", "list_ranking")
    order = rng.permutation(n)  # order[r] is the element of rank r
    nxt = np.full(n, -1, np.int32)
    nxt[order[:-1]] = order[1:]
    rank, rounds = mod.list_rank(nxt, out=cuda.to_device(poisoned(n, np.int32)))
    expected = np.empty(n, np.int32)
    expected[order] = np.arange(n)
    assert np.array_equal(rank, expected)
    assert rounds == max(1, (n - 1).bit_length()) + (1 if n > 1 else 0), "one round per doubling, plus the round that sees no change"


@pytest.mark.exercise("euler.3-orientation")
@pytest.mark.parametrize("size", [0, 2, 6])
def test_orientation(impl, rng, size):
    mod = impl("euler", "orientation")
    src, dst = closed_walks(rng, 6, size, 5)
    flip = rng.random(src.size) < 0.5
    src, dst = np.where(flip, dst, src), np.where(flip, src, dst)
    keep = mod.orientation(src, dst, keep_out=cuda.to_device(poisoned(src.size, np.int32)))
    assert keep.dtype == bool and keep.shape == src.shape
    osrc, odst = np.where(keep, src, dst), np.where(keep, dst, src)
    assert ref.degree_problem(osrc, odst) is None, "not balanced"
    assert np.array_equal(keep, ref.orient_reference(src, dst))
