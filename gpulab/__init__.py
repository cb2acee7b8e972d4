"""gpulab: GPU algorithms built step by step, in numba.cuda and CUDA C.

Importing `gpulab` first decides whether kernels run on a real GPU or on numba's CUDA
simulator (see [`gpulab.device`][gpulab.device]); it must therefore be imported before `numba`.
"""

from gpulab import device as device  # noqa: F401  (must run before numba is imported)

if device.on_simulator():
    from gpulab import simwarp as _simwarp

    _simwarp.fix_shared_arrays()  # numba-cuda's cuda.shared.array has a race: a block's threads could get two arrays
    _simwarp.add_cache_hints()  # cuda.ldcs, which numba-cuda's simulator lacks
    if _simwarp.enabled_by_environment():
        _simwarp.install()  # warp intrinsics for the simulator: every numba variant runs without a GPU
from gpulab.errors import GpulabError, LimitError, ShapeError, DtypeError, BackendUnavailable

__all__ = ["device", "GpulabError", "LimitError", "ShapeError", "DtypeError", "BackendUnavailable"]
__version__ = "0.1.0"
