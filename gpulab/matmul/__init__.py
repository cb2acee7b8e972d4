"""Chapter 1: matrix multiplication, from one thread per output to register tiling.

>>> import numpy as np, gpulab.matmul as mm
>>> A = np.random.rand(33, 17).astype(np.float32); B = np.random.rand(17, 5).astype(np.float32)
>>> C = mm.matmul(A, B, variant="shared")   # doctest: +SKIP
"""

from __future__ import annotations

import numpy as np

from gpulab import device  # noqa: F401  (selects GPU or simulator before numba loads)
from gpulab.matmul.host import validate
from gpulab.matmul.reference import matmul_reference
from gpulab.matmul.variants import REGISTRY

__all__ = ["matmul", "matmul_reference", "REGISTRY", "variants"]


# --8<-- [start:entry]
def matmul(A: np.ndarray, B: np.ndarray, variant: str = "register", backend: str = "numba") -> np.ndarray:
    """Multiply float32 matrices on the GPU (or the simulator) with the chosen variant.

    Args:
        A: M×K float32 matrix.
        B: K×N float32 matrix (for ``constant*`` variants at most 64 KiB: K·N ≤ 16384).
        variant: a name from ``gpulab.matmul.variants()``.
        backend: ``"numba"`` or ``"cuda-c"`` (needs pycuda and a GPU).

    Returns:
        C = A @ B as an M×N float32 numpy array.

    Raises:
        ShapeError, DtypeError, LimitError: the inputs do not fit the kernels (the message says which limit).
        BackendUnavailable: the variant cannot run here (the message says why).
    """
    from numba import cuda

    validate(A, B)
    v = REGISTRY.resolve(variant, backend)
    A = np.ascontiguousarray(A)
    B = np.ascontiguousarray(B)
    dA, dB = cuda.to_device(A), cuda.to_device(B)
    dC = cuda.device_array((A.shape[0], B.shape[1]), dtype=np.float32)
    v.run(dA, dB, dC, B, v.params)()
    return dC.copy_to_host()
# --8<-- [end:entry]


def variants(backend: str | None = None) -> list[str]:
    """Names of the registered variants (of one backend, or all)."""
    return list(dict.fromkeys(REGISTRY.names(backend)))
