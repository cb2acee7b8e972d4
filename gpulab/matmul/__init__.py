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

import threading

import numpy as np

from gpulab.chapters import Chapter
from gpulab import device  # noqa: F401  (selects GPU or simulator before numba loads)
from gpulab.arrays import caller_of, device_input_on, device_result, numba_stream, to_caller
from gpulab.launch import PlanCache, current_context
from gpulab.matmul.host import plan, validate
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
            `"streamk"` on both backends; on numba's simulator `"register"` (quicker to simulate).
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


def clear_cache() -> None:
    """Forget the launches the public call keeps between calls (their kernels stay compiled)
    and the views of other libraries' arrays (`gpulab.arrays.clear_views`). Call it after a
    device reset (`numba.cuda.close()`, a CuPy or PyTorch reset): a new context can get the
    old one's handle, and a kept launch would then use kernels and a workspace that are gone."""
    from gpulab.arrays import clear_views

    _PLANS.clear()
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
