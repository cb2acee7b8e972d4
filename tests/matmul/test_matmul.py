"""Chapter 1: every variant of both backends against the float64 CPU reference."""

import numpy as np
import pytest
from numba import cuda

import gpulab.matmul as mm
from gpulab.arrays import is_device_array
from gpulab.checking import float32_tolerance, poisoned, relative_error
from gpulab.errors import BackendUnavailable, DtypeError, LimitError, ShapeError
from gpulab import device
from gpulab.launch import ceil_div, check_block
from gpulab.matmul import host
from gpulab.matmul.variants import CONSTANT_VARIANTS, REGISTRY
from tests.conftest import ON_SIMULATOR, device_only, from_gpu, gpu_library, on_gpu, skip_unless_runnable

# Adversarial shapes (M, K, N): 1x1x1, odd primes, non-square, and tile-1 / tile / tile+1 for
# the 16-wide shared tiles and the 128-wide register tiles (with K crossing the BK=8 stages).
SHAPES_SMALL = [(1, 1, 1), (1, 7, 3), (5, 1, 11), (17, 13, 3), (15, 16, 17), (16, 31, 16), (33, 9, 2)]
SHAPES_TILE = [(127, 9, 129), (129, 17, 128)]
# `small`'s 64x64 tiles, 16 deep: tile-1 / tile / tile+1, K across one and two k-tiles
SHAPES_SMALL_TILE = [(63, 15, 65), (65, 16, 64), (64, 33, 63)]
# On a GPU the same checks are cheap at sizes the simulator could never run.
SHAPES_GPU = [(128, 128, 128), (1000, 999, 1001), (2049, 257, 1023), (4099, 64, 37), (8192, 128, 128), (8191, 127, 129)]


def shapes_for(variant):
    if not ON_SIMULATOR:
        return SHAPES_SMALL + SHAPES_TILE + SHAPES_SMALL_TILE + SHAPES_GPU
    if variant.name in ("register", "prefetch", "wide", "vec4", "warptile"):
        return SHAPES_SMALL + SHAPES_TILE  # the 128-tile edges matter most here
    if variant.name == "small":
        return SHAPES_SMALL + SHAPES_SMALL_TILE
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
        host.geometry(REGISTRY.get("shared", "numba").policy, {"TILE": 64}, 1, 1)


# ----------------------------------------------------------------------------- device arrays in, device arrays out


DEVICE_SHAPES = [(1, 1, 1), (33, 40, 31)]


@pytest.mark.parametrize("name", ["naive", "shared", "register", "wide"])
@pytest.mark.parametrize("shape", DEVICE_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_device_inputs_stay_on_the_device(name, shape, rng):
    """numba device arrays in (their host copies refused): a numba device array out, same result."""
    M, K, N = shape
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    C = mm.matmul(device_only(A), device_only(B), variant=name)
    assert is_device_array(C) and not isinstance(C, np.ndarray)
    assert tuple(C.shape) == (M, N) and np.dtype(C.dtype) == np.float32
    assert relative_error(C.copy_to_host(), mm.matmul_reference(A, B)) <= float32_tolerance(K)


def test_mixed_inputs_and_streams(rng):
    """A host A with a device B gives a device C; numpy in gives numpy out; a stream is accepted."""
    A = rng.standard_normal((9, 5), dtype=np.float32)
    B = rng.standard_normal((5, 7), dtype=np.float32)
    ref = mm.matmul_reference(A, B)
    C = mm.matmul(A, device_only(B), variant="coalesced", stream=cuda.stream())
    assert not isinstance(C, np.ndarray)
    assert relative_error(C.copy_to_host(), ref) <= float32_tolerance(5)
    C = mm.matmul(A, B, variant="coalesced", stream=cuda.stream())
    assert isinstance(C, np.ndarray) and relative_error(C, ref) <= float32_tolerance(5)


@pytest.mark.parametrize("name", CONSTANT_VARIANTS)
def test_constant_variants_take_a_device_B(name, rng):
    """numba compiles B into the constant kernels, so a device B (<= 64 KiB) is copied to the
    host once for that (documented); A stays on the device."""
    A = rng.standard_normal((37, 29), dtype=np.float32)
    B = rng.standard_normal((29, 41), dtype=np.float32)
    C = mm.matmul(device_only(A), cuda.to_device(B), variant=name)
    assert relative_error(C.copy_to_host(), mm.matmul_reference(A, B)) <= float32_tolerance(29)


def test_device_inputs_are_validated_from_the_interface():
    with pytest.raises(DtypeError, match="float32"):
        mm.matmul(device_only(np.ones((2, 2))), device_only(np.ones((2, 2), np.float32)))
    with pytest.raises(ShapeError, match="inner dimensions differ"):
        mm.matmul(device_only(np.ones((2, 3), np.float32)), device_only(np.ones((2, 2), np.float32)))
    with pytest.raises(ShapeError, match="2-D"):
        mm.matmul(device_only(np.ones(3, np.float32)), device_only(np.ones((3, 2), np.float32)))


@pytest.mark.parametrize("lib_name", ["cupy", "torch"])
@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_cupy_and_torch_inputs_come_back_in_their_library(lib_name, backend, rng):
    """GPU only: CuPy in → CuPy out, PyTorch in → PyTorch out, on the caller's stream too."""
    lib = gpu_library(lib_name)
    skip_unless_runnable(REGISTRY.get("register", backend))
    A = rng.standard_normal((1000, 999), dtype=np.float32)
    B = rng.standard_normal((999, 1001), dtype=np.float32)
    ref = mm.matmul_reference(A, B)
    for name in ("shared", "register", "constant"):
        Bx = B[:, :16] if name == "constant" else B
        C = mm.matmul(on_gpu(lib, A), on_gpu(lib, Bx), variant=name, backend=backend)
        assert type(C).__module__.split(".")[0] == lib_name, type(C)
        assert relative_error(from_gpu(C), ref[:, :Bx.shape[1]]) <= float32_tolerance(999), name
    stream = lib.cuda.Stream() if lib_name == "cupy" else lib.cuda.Stream()
    C = mm.matmul(on_gpu(lib, A), on_gpu(lib, B), variant="register", backend=backend, stream=stream)
    stream.synchronize()
    assert relative_error(from_gpu(C), ref) <= float32_tolerance(999)


@pytest.mark.parametrize("name", ["shared", "register", "streamk"])
def test_a_kept_launch_takes_each_calls_arrays(name, rng):
    """The public call keeps the launch of each shape it ran (kernel, grid, stream-K schedule):
    a second call of that shape, with other data, other arrays and another stream, gets its own
    result; a call of another shape its own launch."""
    mm.clear_cache()
    v = REGISTRY.get(name, "numba")
    for shape in [(37, 29, 41), (37, 29, 41), (41, 29, 37)]:
        M, K, N = shape
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        for stream in (None, cuda.stream()):
            C = mm.matmul(device_only(A), device_only(B), variant=name, stream=stream)
            if stream is not None:
                stream.synchronize()
            assert relative_error(C.copy_to_host(), mm.matmul_reference(A, B)) <= float32_tolerance(K), (shape, stream)
    keys = list(mm._PLANS._plans)
    assert {k[2:5] for k in keys} == {(37, 29, 41), (41, 29, 37)} and all(k[:2] == (v.name, v.backend) for k in keys)


def test_the_second_call_of_a_shape_builds_no_launch(monkeypatch, rng):
    """The public call builds a shape's launch once (`gpulab.matmul.host.plan`): calls of the
    same shape and stream reuse it, another shape builds its own."""
    built, real = [], mm.plan
    monkeypatch.setattr(mm, "plan", lambda policy, backend, M, K, N, *a: built.append((M, K, N)) or
                        real(policy, backend, M, K, N, *a))
    mm.clear_cache()
    for M, K, N in [(9, 7, 5), (9, 7, 5), (9, 7, 5), (5, 7, 9)]:
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        assert relative_error(mm.matmul(A, B, variant="shared"), mm.matmul_reference(A, B)) <= float32_tolerance(K)
    assert built == [(9, 7, 5), (5, 7, 9)]
    mm.clear_cache()


@pytest.mark.skipif(ON_SIMULATOR, reason="a GPU-sized product: the simulator would take hours")
@pytest.mark.parametrize("backend", ["numba", "cuda-c"])
def test_a_kept_stream_k_launch_splits_correctly_call_after_call(backend, rng):
    """GPU: a kept stream-K launch at a shape whose tiles are all split along k (1031^3: 81
    tiles on 264 slots of an H200) reuses its workspace and arrival counters call after call;
    each call, with new data, matches the float64 product."""
    from gpulab.matmul.tune import _reference as float64_product

    v = REGISTRY.get("streamk", backend)
    skip_unless_runnable(v)
    M = K = N = 1031
    tiles = ceil_div(M, v.params["WT_BM"]) * ceil_div(N, v.params["WT_BN"])
    slots = device.info().sm_count * v.params["SK_PER_SM"]
    assert host.stream_k_schedule(tiles, ceil_div(K, v.params["WT_BK"]), slots, v.params["SK_MIN"])[1] > 0
    mm.clear_cache()
    for _ in range(3):
        A = rng.standard_normal((M, K), dtype=np.float32)
        B = rng.standard_normal((K, N), dtype=np.float32)
        C = mm.matmul(device_only(A), device_only(B), variant="streamk", backend=backend)
        assert relative_error(C.copy_to_host(), float64_product(A, B)) <= float32_tolerance(K)
    assert len(mm._PLANS) == 1
