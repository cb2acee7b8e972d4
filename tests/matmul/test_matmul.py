"""Chapter 1: every variant of both backends against the float64 CPU reference."""

import numpy as np
import pytest
from numba import cuda

import gpulab.matmul as mm
from gpulab.checking import float32_tolerance, poisoned, relative_error
from gpulab.errors import BackendUnavailable, DtypeError, LimitError, ShapeError
from gpulab.launch import check_block
from gpulab.matmul import host
from gpulab.matmul.variants import CONSTANT_VARIANTS, REGISTRY
from tests.conftest import ON_SIMULATOR, skip_unless_runnable

# Adversarial shapes (M, K, N): 1x1x1, odd primes, non-square, and tile-1 / tile / tile+1 for
# the 16-wide shared tiles and the 128-wide register tiles (with K crossing the BK=8 stages).
SHAPES_SMALL = [(1, 1, 1), (1, 7, 3), (5, 1, 11), (17, 13, 3), (15, 16, 17), (16, 31, 16), (33, 9, 2)]
SHAPES_TILE = [(127, 9, 129), (129, 17, 128)]
# On a GPU the same checks are cheap at sizes the simulator could never run.
SHAPES_GPU = [(128, 128, 128), (1000, 999, 1001), (2049, 257, 1023), (4099, 64, 37)]


def shapes_for(variant):
    if not ON_SIMULATOR:
        return SHAPES_SMALL + SHAPES_TILE + SHAPES_GPU
    if variant.name in ("register", "prefetch", "wide", "vec4", "warptile"):
        return SHAPES_SMALL + SHAPES_TILE  # the 128-tile edges matter most here
    return SHAPES_SMALL + [(33, 40, 31)]


def run_variant(variant, A, B):
    """Launch through the registry on a NaN-poisoned C, so unwritten cells fail the check."""
    dA, dB = cuda.to_device(A), cuda.to_device(B)
    dC = cuda.to_device(poisoned((A.shape[0], B.shape[1]), np.float32))
    variant.run(dA, dB, dC, B, variant.params)()
    return dC.copy_to_host()


CASES = [pytest.param(v, shape, id=f"{v.key}-{'x'.join(map(str, shape))}") for v in REGISTRY for shape in shapes_for(v)]


@pytest.mark.parametrize("variant,shape", CASES)
def test_variant_matches_reference(variant, shape, rng):
    skip_unless_runnable(variant)
    M, K, N = shape
    if variant.name in CONSTANT_VARIANTS and K * N > 16384:
        pytest.skip("B does not fit constant memory at this shape (tested in test_constant_limit)")
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = run_variant(variant, A, B)
    err = relative_error(C, mm.matmul_reference(A, B))
    assert err <= float32_tolerance(K), f"{variant.key} {shape}: relative error {err:.3g}"


def test_public_entry_point(rng):
    A = rng.standard_normal((19, 23), dtype=np.float32)
    B = rng.standard_normal((23, 29), dtype=np.float32)
    C = mm.matmul(A, B, variant="shared")
    assert C.dtype == np.float32 and C.shape == (19, 29)
    assert relative_error(C, mm.matmul_reference(A, B)) <= float32_tolerance(23)


def test_every_ladder_step_has_both_backends():
    from gpulab.matmul.variants import LADDER_STEPS

    assert {"naive", "coalesced", "shared", "constant", "register"} <= set(LADDER_STEPS)
    for step in LADDER_STEPS:
        assert REGISTRY.get(step, "numba") and REGISTRY.get(step, "cuda-c")


def test_unwritten_output_is_caught(rng):
    """The check itself can fail: a launch that covers only half of C leaves NaN behind."""
    from gpulab.matmul.kernels_numba import matmul_coalesced

    A = rng.standard_normal((8, 8), dtype=np.float32)
    B = rng.standard_normal((8, 32), dtype=np.float32)
    dC = cuda.to_device(poisoned((8, 32), np.float32))
    matmul_coalesced[(1, 1), (16, 16)](cuda.to_device(A), cuda.to_device(B), dC, np.int32(8), np.int32(32), np.int32(8))
    assert relative_error(dC.copy_to_host(), mm.matmul_reference(A, B)) == float("inf")


@pytest.mark.parametrize("name", CONSTANT_VARIANTS)
def test_constant_limit(name, rng):
    """B of exactly 64 KiB works; one float more raises an error that names the limit."""
    v = REGISTRY.get(name, "numba")
    A = rng.standard_normal((2, 16384), dtype=np.float32)
    B = rng.standard_normal((16384, 1), dtype=np.float32)
    C = run_variant(v, A, B)
    assert relative_error(C, mm.matmul_reference(A, B)) <= float32_tolerance(16384)
    A2 = rng.standard_normal((2, 16385), dtype=np.float32)
    B2 = rng.standard_normal((16385, 1), dtype=np.float32)
    with pytest.raises(LimitError, match=r"65536 bytes"):
        mm.matmul(A2, B2, variant=name)


@pytest.mark.parametrize("A,B,error,pattern", [
    (np.ones((3, 4)), np.ones((4, 2), np.float32), DtypeError, "float32"),
    (np.ones((3, 4), np.float32), np.ones((4, 2), np.int32), DtypeError, "float32"),
    (np.ones(4, np.float32), np.ones((4, 2), np.float32), ShapeError, "2-D"),
    (np.ones((2, 3, 4), np.float32), np.ones((4, 2), np.float32), ShapeError, "2-D"),
    (np.ones((3, 4), np.float32), np.ones((5, 2), np.float32), ShapeError, "inner dimensions differ: A is 3x4 but B is 5x2"),
    (np.ones((0, 4), np.float32), np.ones((4, 2), np.float32), ShapeError, "empty"),
    (np.ones((3, 4), np.float32), np.ones((4, 0), np.float32), ShapeError, "empty"),
    ([[1.0]], np.ones((1, 1), np.float32), ShapeError, "numpy array"),
])
def test_bad_input_is_rejected_clearly(A, B, error, pattern):
    with pytest.raises(error, match=pattern):
        mm.matmul(A, B)


def test_unknown_variant_lists_the_known_ones():
    with pytest.raises(Exception, match="known: naive"):
        mm.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), variant="fastest")


@pytest.mark.skipif(not ON_SIMULATOR, reason="only on the simulator is the CUDA C backend certainly absent")
def test_cuda_c_on_simulator_says_why():
    with pytest.raises(BackendUnavailable, match="real GPU"):
        mm.matmul(np.ones((2, 2), np.float32), np.ones((2, 2), np.float32), variant="shared", backend="cuda-c")


def test_block_of_512x512_threads_is_refused_before_launch():
    """The classic mistake the book shows: 262144 threads in one block (the limit is 1024)."""
    with pytest.raises(LimitError, match="262144 threads exceeds the limit of 1024"):
        check_block(512 * 512)
    with pytest.raises(LimitError, match="1024"):
        host.numba_shared(None, None, None, None, {"tile": 64})
