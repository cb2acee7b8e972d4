"""Chapter 1: matrix multiplication, from one thread per output to register tiling.

Examples:
    Numpy in, numpy out (sizes that are not multiples of the tile are fine):

    >>> import numpy as np, gpulab.matmul as mm
    >>> rng = np.random.default_rng(1)
    >>> A, B = rng.random((33, 17), dtype=np.float32), rng.random((17, 5), dtype=np.float32)
    >>> C = mm.matmul(A, B, variant="shared")
    >>> C.shape, C.dtype, bool(np.allclose(C, A @ B, rtol=1e-5))
    ((33, 5), dtype('float32'), True)

    A device array comes back as the same library's device array, with no copy:
    `mm.matmul(cupy.asarray(A), cupy.asarray(B))` returns a CuPy array.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from gpulab.chapters import Chapter
from gpulab import device  # noqa: F401  (selects GPU or simulator before numba loads)
from gpulab.arrays import caller_of, cupy_on_current_device, device_input_on, device_result, numba_stream, to_caller
from gpulab.launch import PlanCache, current_context
from gpulab.matmul.host import clear_workspaces, fits, plan, pointer_plan, validate
from gpulab.matmul.reference import matmul_reference
from gpulab.matmul.variants import DEFAULTS, REGISTRY, default_variant

__all__ = ["CHAPTER", "clear_cache", "matmul", "matmul_reference", "REGISTRY", "variants"]


# --8<-- [start:entry]
def matmul(A, B, variant: str | None = None, backend: str = "numba", stream=None):
    """Multiply float32 matrices on the GPU (or the simulator) with the chosen variant.

    Args:
        A: M×K float32 matrix: numpy, or a device array (CuPy, PyTorch CUDA tensor, numba).
        B: K×N float32 matrix, the same (for `constant*` variants at most 64 KiB: K·N ≤ 16384;
            numba compiles B into those kernels, so a device B is copied to the host once).
        variant: a name from `gpulab.matmul.variants()`; `None`: the variant measured fastest
            (or within 2.5 % of it) for the shape ([`default_variant`][gpulab.matmul.variants.default_variant]):
            `"small"` where C has at most half as many 128×128 tiles as the GPU has SMs, else
            `"streamk"`, on both backends; on numba's simulator `"register"` (quicker to simulate).
        backend: `"numba"` or `"cuda-c"` (needs pycuda and a GPU); chapter 1 has no CPU
            variant, so `"cpu"` is an error that says so.
        stream: a numba, CuPy or PyTorch stream to run on (default: the default stream).

    Returns:
        C = A @ B, M×N float32: a numpy array when A and B are numpy arrays; otherwise a device
        array of the first device input's library (CuPy → CuPy, PyTorch → PyTorch, else a
        numba device array), left on the device without a copy.

    Raises:
        ShapeError, DtypeError, LimitError: the inputs do not fit the kernels (the message says which limit).
        BackendUnavailable: the variant cannot run here (the message says why).
    """
    if stream is None and backend in _BY_POINTERS:  # CuPy arrays on the current device: the short way
        C = _by_pointers(A, B, variant, backend)
        if C is not None:
            return C
    M, K, N = validate(A, B)
    if variant is None and backend in DEFAULTS:
        variant = default_variant(backend, M, K, N)
    v = REGISTRY.resolve(variant, backend)
    s = numba_stream(stream)
    a, b = device_input_on(A, "A", stream=s), device_input_on(B, "B", stream=s)
    like = caller_of(a, b)
    dC, made = device_result((M, N), np.float32, like, stream=s)  # a CuPy or PyTorch caller's: from its pool
    if v.policy.constant_b:  # B is compiled into (numba) or copied next to (CUDA C) the kernel: per call
        v.run(a.array, b.array, dC, None if b.on_device else b.source, v.launch_params(), stream=s)()
    else:  # the launch for this shape, made once (kernel, grid, stream-K schedule and workspace)
        _plan(v, M, K, N, s)(a.array, b.array, dC)
    return made if made is not None else to_caller(dC, like, stream=s)
# --8<-- [end:entry]


# The launches of the last shapes called (`gpulab.matmul.host.plan`). Keyed by the CUDA context
# (its kernels and workspace are that device's), the stream and the host thread as well: a
# stream-K launch's workspace is its stream's alone (two host threads' "default" streams may be
# two streams that run at once).
_PLANS = PlanCache(maxsize=8)


def _plan(v, M: int, K: int, N: int, stream):
    key = (v.name, v.backend, M, K, N, current_context(), int(stream) if stream else 0, threading.get_ident())
    return _PLANS.get(key, lambda: plan(v.policy, v.backend, M, K, N, v.launch_params(), stream))


_F32 = np.dtype(np.float32)


# --8<-- [start:by_pointers]
_BY_POINTERS = ("cuda-c", "numba")


def _by_pointers(A, B, variant, backend: str):
    """`matmul(A, B, variant, backend)` for CuPy arrays that need none of the full path's work,
    or `None` (take the full path, which also names what is wrong with the inputs).

    Where A and B are C-contiguous float32 CuPy matrices that the kernels can index, on the
    current device, with CuPy's null stream current (the kernels' stream), the launch needs only
    their addresses: C comes from CuPy's pool and the kept launch for the shape takes the three
    addresses ([`pointer_plan`][gpulab.matmul.host.pointer_plan]). No array interface is read
    and no numba view made (numba's launch types its arguments from views made once, when the
    shape's launch is kept). The launch is the same kernel, grid and stream-K schedule as the
    full path's."""
    cupy = cupy_on_current_device(A, B)
    if cupy is None or A.ndim != 2 or B.ndim != 2:
        return None
    if A.dtype != _F32 or B.dtype != _F32:  # (C-contiguous: `cupy_on_current_device` checked)
        return None
    (M, K), (K2, N) = A.shape, B.shape
    if K != K2 or not fits(M, K, N):
        return None
    ctx = current_context()
    if not ctx:  # (no context current in this thread yet: the full path makes one current)
        return None
    key = ("pointers", variant, backend, M, K, N, ctx, threading.get_ident())
    go = _PLANS.get(key, lambda: _pointer_plan(variant, backend, M, K, N, A, B))
    if go is False:  # (a variant with no launch by addresses: a constant-memory one)
        return None
    C = cupy.empty((M, N), np.float32)
    go(A.data.ptr, B.data.ptr, C.data.ptr)
    return C
# --8<-- [end:by_pointers]


def _pointer_plan(variant, backend: str, M: int, K: int, N: int, A, B):
    """The launch by addresses for this shape, variant (`None`: the shape's default) and backend,
    or `False` where there is none. numba's kernel arguments are typed from views of this call's
    A, B and a C of the shape (templates: nothing runs on them)."""
    v = REGISTRY.resolve(variant if variant is not None else default_variant(backend, M, K, N), backend)
    templates = None
    if backend == "numba" and not v.policy.constant_b:
        from numba import cuda

        C = sys.modules["cupy"].empty((M, N), np.float32)
        templates = tuple(cuda.as_cuda_array(x, sync=False) for x in (A, B, C))
    go = pointer_plan(v.policy, backend, M, K, N, v.launch_params(), templates)
    return False if go is None else go


def clear_cache() -> None:
    """Forget the launches the public call keeps between calls (their kernels stay compiled),
    the stream-K workspaces and the views of other libraries' arrays (`gpulab.arrays.clear_views`). Call it after a
    device reset (`numba.cuda.close()`, a CuPy or PyTorch reset): a new context can get the
    old one's handle, and a kept launch would then use kernels and a workspace that are gone."""
    from gpulab.arrays import clear_views

    _PLANS.clear()
    clear_workspaces()
    clear_views()


def variants(backend: str | None = None) -> list[str]:
    """Names of the registered variants (of one backend, or all)."""
    return list(dict.fromkeys(REGISTRY.names(backend)))


# ----------------------------------------------------------------------------- the chapter


from gpulab.matmul import bench as _bench, tour as _tour  # noqa: E402  (they use the API above)
from gpulab.matmul.variants import cuda_builds as _cuda_builds, ptx_targets as _ptx_targets  # noqa: E402

CHAPTER = Chapter(name="matmul", number=1, title="Matrix multiplication", registry=REGISTRY,
                  ptx_targets=_ptx_targets, cuda_builds=_cuda_builds, bench=_bench.SPEC,
                  tour_cases=_tour.tour_cases, exercises="matmul")
