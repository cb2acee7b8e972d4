"""Chapter 1's short way for CuPy arrays (`gpulab.matmul._by_pointers`): which calls take it, what
the kept launch by addresses is given, and that every other call takes the full path. On any
machine with a CuPy stand-in (a module in `sys.modules` with the few attributes the short way
reads) and a recording launch; on a GPU with CuPy and pycuda, the real one against float64."""

import sys

import numpy as np
import pytest

import gpulab.matmul as mm
from gpulab.checking import float32_tolerance, relative_error
from gpulab.errors import BackendUnavailable, ShapeError
from tests.conftest import ON_SIMULATOR, gpu_library
from tests.cupy_standin import Flags, Memory, addresses, module


def _standin(current_device=0, stream=0, own_flag=False):
    """A CuPy stand-in module: `ndarray`, `empty`, `float32`, `cuda.runtime.getDevice`,
    `cuda.get_current_stream`; every array a new address. `own_flag`: the arrays have CuPy's
    `_c_contiguous`, and reading `flags` fails the test (the short way reads the attribute)."""
    at = addresses()

    class ndarray:  # noqa: N801 (CuPy's name)
        def __init__(self, shape, dtype=np.float32, c=True, device=0):
            self.shape, self.ndim, self.dtype = tuple(shape), len(shape), np.dtype(dtype)
            self._flags, self.data = Flags(c), Memory(next(at), device)

        @property
        def flags(self):
            assert not own_flag, "flags read where the array has _c_contiguous"
            return self._flags

    if own_flag:
        ndarray._c_contiguous = property(lambda self: self._flags.c_contiguous)
    cupy = module(ndarray, lambda shape, dtype: ndarray(shape, dtype, device=current_device), current_device, stream)
    cupy.float32 = np.float32
    return cupy


CONTEXT = 0x5E55  # a CUDA context handle, as the driver's `cuCtxGetCurrent` gives one


@pytest.fixture(params=[False, True], ids=["flags", "own_flag"])
def recorded(request, monkeypatch):
    """(stand-in module, launches by addresses, plans built) with `_pointer_plan` recording;
    arrays with and without CuPy's `_c_contiguous`."""
    launches, built = [], []

    def plan(variant, backend, M, K, N, A, B):
        built.append((variant, backend, M, K, N))
        return lambda *p: launches.append(p)

    cupy = _standin(own_flag=request.param)
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(mm, "_pointer_plan", plan)
    monkeypatch.setattr(mm, "current_context", lambda: CONTEXT)  # (the simulator has none)
    mm.clear_cache()
    yield cupy, launches, built
    mm.clear_cache()


@pytest.mark.parametrize("backend", ["cuda-c", "numba"])
def test_cupy_matrices_on_the_current_device_go_by_their_addresses(backend, recorded):
    cupy, launches, built = recorded
    for M, K, N in ((1, 1, 1), (8192, 128, 128), (127, 9, 129)):
        A, B = cupy.ndarray((M, K)), cupy.ndarray((K, N))
        C = mm._by_pointers(A, B, None, backend)
        assert isinstance(C, cupy.ndarray) and C.shape == (M, N) and C.dtype == np.float32
        assert launches[-1] == (A.data.ptr, B.data.ptr, C.data.ptr)
        C2 = mm._by_pointers(A, B, None, backend)  # the second call of a shape: no new plan, its own C
        assert launches[-1] == (A.data.ptr, B.data.ptr, C2.data.ptr)
    assert built == [(None, backend, 1, 1, 1), (None, backend, 8192, 128, 128), (None, backend, 127, 9, 129)]
    mm._by_pointers(cupy.ndarray((4, 4)), cupy.ndarray((4, 4)), "small", backend)
    assert built[-1] == ("small", backend, 4, 4, 4)  # a named variant: its own plan


@pytest.mark.parametrize("case", ["float64 A", "float64 B", "3-d A", "1-d B", "A not contiguous", "B not contiguous",
                                  "K differs", "empty", "A on another device", "B on another device",
                                  "another current device", "a stream current", "over int32", "numpy",
                                  "no current context"])
def test_everything_else_takes_the_full_path(case, recorded, monkeypatch):
    cupy, launches, built = recorded
    A, B = cupy.ndarray((64, 32)), cupy.ndarray((32, 16))
    if case == "float64 A":
        A = cupy.ndarray((64, 32), np.float64)
    elif case == "float64 B":
        B = cupy.ndarray((32, 16), np.float64)
    elif case == "3-d A":
        A = cupy.ndarray((2, 64, 32))
    elif case == "1-d B":
        B = cupy.ndarray((32,))
    elif case == "A not contiguous":
        A = cupy.ndarray((64, 32), c=False)
    elif case == "B not contiguous":
        B = cupy.ndarray((32, 16), c=False)
    elif case == "K differs":
        B = cupy.ndarray((31, 16))
    elif case == "empty":
        A, B = cupy.ndarray((0, 32)), cupy.ndarray((32, 16))
    elif case == "A on another device":
        A = cupy.ndarray((64, 32), device=1)
    elif case == "B on another device":
        B = cupy.ndarray((32, 16), device=1)
    elif case == "another current device":
        monkeypatch.setitem(sys.modules, "cupy", _standin(current_device=1))
        A, B = sys.modules["cupy"].ndarray((64, 32)), sys.modules["cupy"].ndarray((32, 16))
    elif case == "a stream current":
        monkeypatch.setitem(sys.modules, "cupy", _standin(stream=0x7F00))
        A, B = sys.modules["cupy"].ndarray((64, 32)), sys.modules["cupy"].ndarray((32, 16))
    elif case == "over int32":
        A, B = cupy.ndarray((1 << 16, 1 << 15)), cupy.ndarray((1 << 15, 16))
    elif case == "numpy":
        A, B = np.ones((64, 32), np.float32), np.ones((32, 16), np.float32)
    elif case == "no current context":  # a thread where no CUDA call has made one current yet
        monkeypatch.setattr(mm, "current_context", lambda: 0)
    for backend in ("cuda-c", "numba"):
        assert mm._by_pointers(A, B, None, backend) is None
    assert not launches and not built


def test_a_variant_without_a_launch_by_addresses_takes_the_full_path(monkeypatch):
    """`_pointer_plan` says False (a constant-memory variant): kept, and the full path taken."""
    cupy = _standin()
    monkeypatch.setitem(sys.modules, "cupy", cupy)
    monkeypatch.setattr(mm, "current_context", lambda: CONTEXT)
    built = []
    monkeypatch.setattr(mm, "_pointer_plan", lambda *a: built.append(a) or False)
    mm.clear_cache()
    try:
        for _ in range(2):
            assert mm._by_pointers(cupy.ndarray((8, 4)), cupy.ndarray((4, 8)), "constant", "cuda-c") is None
        assert len(built) == 1
    finally:
        mm.clear_cache()


def test_only_a_call_on_the_default_stream_looks_for_the_short_way(recorded, monkeypatch):
    cupy, launches, built = recorded
    looked = []
    monkeypatch.setattr(mm, "_by_pointers", lambda *a: looked.append(a))  # None: the full path follows
    A, B = np.ones((8, 4), np.float32), np.ones((4, 8), np.float32)
    for backend in ("numba", "cuda-c"):
        for stream in (0, None):  # a stream named (even the default one): the full path only
            looked.clear()
            try:
                mm.matmul(A, B, "shared", backend, stream=stream)
            except BackendUnavailable:  # (the simulator has no CUDA C: the full path says so)
                pass
            assert looked == ([] if stream == 0 else [(A, B, "shared", backend)])


@pytest.mark.skipif(ON_SIMULATOR, reason="needs a GPU (CuPy and pycuda)")
@pytest.mark.parametrize("backend", ["cuda-c", "numba"])
@pytest.mark.parametrize("variant", [None, "small", "streamk", "warptile", "register", "cpasync", "constant"])
@pytest.mark.parametrize("shape", [(1, 1, 1), (8192, 128, 128), (8191, 127, 129), (512, 512, 512), (1000, 999, 1001)],
                         ids=lambda s: "x".join(map(str, s)))
def test_the_short_way_on_a_gpu_matches_float64(backend, variant, shape, monkeypatch, rng):
    """Every fast variant by addresses (never reaching the full path's input handling), on
    inputs that are C-contiguous views starting one row into a larger array (addresses with an
    offset); a constant-memory variant takes the full path. Two calls: the second reuses the kept
    launch, and the first call's C is still right after it."""
    from gpulab import arrays, cudac

    cp = gpu_library("cupy")
    if backend == "cuda-c" and cudac.unavailable_reason():
        pytest.skip(cudac.unavailable_reason())
    if variant is not None and variant not in mm.variants(backend):
        pytest.skip(f"{variant} has no {backend} kernel")
    M, K, N = shape
    if variant == "constant" and K * N > 16384:
        pytest.skip("B does not fit constant memory")
    A = rng.standard_normal((M, K), dtype=np.float32)
    B = rng.standard_normal((K, N), dtype=np.float32)
    bigA, bigB = cp.zeros((M + 2, K), cp.float32), cp.zeros((K + 2, N), cp.float32)
    bigA[1:M + 1], bigB[1:K + 1] = cp.asarray(A), cp.asarray(B)
    cA, cB = bigA[1:M + 1], bigB[1:K + 1]
    assert cA.flags.c_contiguous and cA.data.ptr == bigA.data.ptr + 4 * K
    full = []
    real = arrays.device_input_on
    monkeypatch.setattr(mm, "device_input_on", lambda *a, **k: full.append(1) or real(*a, **k))
    ref = A.astype(np.float64) @ B.astype(np.float64)
    results = []
    for _ in range(2):
        C = mm.matmul(cA, cB, variant, backend)
        assert isinstance(C, cp.ndarray) and C.shape == (M, N) and C.dtype == cp.float32
        results.append(C)
    assert bool(full) == (variant == "constant")
    for C in results:
        assert relative_error(cp.asnumpy(C), ref) <= float32_tolerance(K)


@pytest.mark.skipif(ON_SIMULATOR, reason="needs a GPU (CuPy and pycuda)")
@pytest.mark.parametrize("backend", ["cuda-c", "numba"])
def test_the_short_way_is_taken_on_a_gpu(backend, monkeypatch, rng):
    """A CuPy call never reaches the full path's input handling; a non-contiguous one does."""
    from gpulab import arrays, cudac

    cp = gpu_library("cupy")
    if backend == "cuda-c" and cudac.unavailable_reason():
        pytest.skip(cudac.unavailable_reason())
    full = []
    real = arrays.device_input_on
    monkeypatch.setattr(mm, "device_input_on", lambda *a, **k: full.append(1) or real(*a, **k))
    A = cp.asarray(rng.standard_normal((256, 64), dtype=np.float32))
    B = cp.asarray(rng.standard_normal((64, 96), dtype=np.float32))
    mm.matmul(A, B, "small", backend)  # the first call of the shape: its launch made and kept
    mm.matmul(A, B, "small", backend)
    assert not full
    with pytest.raises(ShapeError, match="non-contiguous"):  # the full path, and its one clear error
        mm.matmul(cp.asfortranarray(A), B, "small", backend)
    assert full


class _Interface:
    """A device array as `validate` reads it: its interface only (no memory)."""

    def __init__(self, shape):
        self.__cuda_array_interface__ = {"shape": shape, "typestr": "<f4", "data": (0, False), "version": 3,
                                         "strides": None}


@pytest.mark.parametrize("M,K,N", [(1, 1, 1), (0, 4, 4), (4, 0, 4), (4, 4, 0), (65536, 32768, 1),
                                   (65536, 32767, 1), (1, 32768, 65536), (1, 32767, 65536), (46341, 1, 46341),
                                   (46340, 1, 46341), (8192, 128, 128)])
def test_the_short_way_and_validate_share_one_rule(M, K, N):
    """`host.fits`, which the short way asks, holds exactly where `validate` accepts the shapes."""
    from gpulab.errors import GpulabError
    from gpulab.matmul import host

    try:
        host.validate(_Interface((M, K)), _Interface((K, N)))
        accepted = True
    except GpulabError:
        accepted = False
    assert host.fits(M, K, N) == accepted


def test_a_launch_by_addresses_keeps_its_fixed_arrays_alive():
    """The stream-K workspace goes to the kernel by address: the launch must keep it."""
    import gc
    import weakref

    from gpulab import cudac

    class Workspace:
        def __init__(self):
            self.__cuda_array_interface__ = {"data": (1 << 20, False), "shape": (1,), "typestr": "<f4", "version": 3}

    class Function:
        def _launch_kernel(self, *args):
            pass

    ws = Workspace()
    alive = weakref.ref(ws)
    go = cudac.pointer_launch(Function(), (1,), (32,), 3, np.int32(1), ws)
    del ws
    gc.collect()
    assert alive() is not None
    go(1, 2, 3)
    del go
    gc.collect()
    assert alive() is None
