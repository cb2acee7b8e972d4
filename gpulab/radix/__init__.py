"""Chapter 4: radix sort — split, scan and scatter, from one bit in global memory to keys in
registers ranked by warp intrinsics.

>>> import numpy as np, gpulab.radix as rx
>>> keys = np.random.default_rng().integers(0, 2**32, 1000, dtype=np.uint32)
>>> out = rx.sort(keys, variant="radix4_shared")   # doctest: +SKIP

Keys are uint32, int32 or float32 (32-bit keys; signed and float keys go through an
order-preserving bit transform, :func:`gpulab.radix.host.to_ordered`). Every sort is stable.
NaNs sort last, after +inf, in input order (as ``numpy.sort`` puts them); ``sort`` returns
them as the NaN with bits 0x7FFFFFFF, and -0.0 as +0.0 (numpy compares them equal).
"""

from __future__ import annotations

import numpy as np

from gpulab import device  # noqa: F401  (selects GPU or simulator before numba loads)
from gpulab.radix import host
from gpulab.radix.reference import (argsort_reference, distinct_reference, scan_reference, sort_reference,
                                    split_reference)
from gpulab.radix.variants import REGISTRY

__all__ = ["sort", "argsort", "sort_pairs", "distinct", "scan", "split", "variants", "REGISTRY",
           "sort_reference", "argsort_reference", "distinct_reference", "scan_reference", "split_reference"]

DEFAULT_VARIANT = "local"
FALLBACK_VARIANT = "radix4_shared"  # where warp intrinsics cannot run (the simulator)


def _resolve(variant, backend):
    if variant is None:
        v = REGISTRY.get(DEFAULT_VARIANT, backend)
        variant = DEFAULT_VARIANT if v.unavailable_reason() is None else FALLBACK_VARIANT
    return REGISTRY.resolve(variant, backend)


def _plan(keys, has_vals, variant, backend, params):
    v = _resolve(variant, backend)
    p = dict(v.params)
    p.update(params or {})
    return v.run(keys.size, has_vals, p)


def _sorted(keys, values, variant, backend, params, iota):
    from numba import cuda

    keys = host.validate_keys(keys)
    ordered = host.to_ordered(keys)
    has_vals = values is not None or iota
    plan = _plan(keys, has_vals, variant, backend, params)
    d_vals = None
    if values is not None:
        d_vals = cuda.to_device(values.view(np.uint32))
    dk, dv = plan.sort(cuda.to_device(ordered), d_vals, iota=iota)
    get = lambda a: a.copy_to_host() if hasattr(a, "copy_to_host") else np.asarray(a)  # noqa: E731
    out_keys = host.from_ordered(get(dk), keys.dtype) if keys.size else keys.copy()
    out_vals = get(dv) if (dv is not None and keys.size) else np.zeros(0, np.uint32)
    return out_keys, out_vals


# --8<-- [start:entry]
def sort(keys: np.ndarray, variant: str | None = None, backend: str = "numba", params: dict | None = None) -> np.ndarray:
    """Stable sort of uint32 / int32 / float32 keys on the GPU (or the simulator).

    Args:
        keys: 1-D array of uint32, int32 or float32 (any length, including 0 and 1).
        variant: a name from ``gpulab.radix.variants()``; ``None`` picks ``"local"`` where warp
            intrinsics run, ``"radix4_shared"`` on the simulator.
        backend: ``"numba"`` or ``"cuda-c"``.
        params: overrides of the variant's compile-time parameters (block sizes, digit bits ...).

    Raises:
        ShapeError, DtypeError, LimitError: the input does not fit the kernels (the message says which limit).
        BackendUnavailable: the variant cannot run here (the message says why).
    """
    return _sorted(keys, None, variant, backend, params, iota=False)[0]
# --8<-- [end:entry]


def argsort(keys: np.ndarray, variant: str | None = None, backend: str = "numba", params: dict | None = None) -> np.ndarray:
    """Stable argsort (int64 indices, like ``numpy.argsort(kind="stable")``)."""
    keys = host.validate_keys(keys)
    return _sorted(keys, None, variant, backend, params, iota=True)[1].astype(np.int64)


def sort_pairs(keys: np.ndarray, values: np.ndarray, variant: str | None = None, backend: str = "numba",
               params: dict | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Sort ``keys`` stably and move ``values`` (any 4-byte dtype) with them."""
    keys = host.validate_keys(keys)
    values = host.validate_values(keys, values)
    k, v = _sorted(keys, values, variant, backend, params, iota=False)
    return k, v.view(values.dtype)


def distinct(keys: np.ndarray, variant: str | None = None, backend: str = "numba", params: dict | None = None) -> np.ndarray:
    """The distinct keys in ascending order (``numpy.unique``): sort, flag run heads, scan, compact."""
    from numba import cuda

    keys = host.validate_keys(keys)
    if keys.size == 0:
        return keys.copy()
    plan = host.distinct_plan(_plan(keys, False, variant, backend, params))
    out, count = plan.run(cuda.to_device(host.to_ordered(keys)))
    out = out[:count]
    return host.from_ordered(out.copy_to_host() if hasattr(out, "copy_to_host") else out, keys.dtype)


def scan(x: np.ndarray, inclusive: bool = False, method: str = "blelloch", backend: str = "numba",
         block: int = 256) -> np.ndarray:
    """Prefix sums of int32 / uint32 values (wrapping like 32-bit integers), any length.

    ``method`` is ``"blelloch"`` (work-efficient) or ``"hillis_steele"``; ``block`` is the
    threads per block (a power of two).
    """
    from numba import cuda

    from gpulab.errors import DtypeError, ShapeError

    if not hasattr(x, "dtype") or getattr(x, "ndim", None) != 1:
        raise ShapeError("scan takes a 1-D numpy array")
    if x.dtype not in (np.int32, np.uint32):
        raise DtypeError(f"x has dtype {x.dtype}; scan is written for int32 and uint32")
    host.check_params({"SCAN_BLOCK": block})
    if x.size == 0:
        return x.copy()
    x = np.ascontiguousarray(x)
    REGISTRY.resolve("split1_global", backend)  # raises BackendUnavailable with the reason
    K = host.provider(backend, {"SCAN_BLOCK": block})
    plan = host.ScanPlan(K, x.size, block, method)
    d = cuda.to_device(x.view(np.int32))
    out = cuda.device_array(x.size, np.int32)
    plan.run(d, out, inclusive)
    return out.copy_to_host().view(x.dtype)


def split(keys: np.ndarray, bit: int, backend: str = "numba", block: int = 256) -> np.ndarray:
    """The stable partition of uint32 keys by one bit (GPU Gems 3, ch. 39): flag, scan, scatter."""
    from numba import cuda

    from gpulab.errors import DtypeError, LimitError

    keys = host.validate_keys(keys)
    if keys.dtype != np.uint32:
        raise DtypeError(f"split takes uint32 keys, got {keys.dtype}")
    if not 0 <= bit < 32:
        raise LimitError(f"bit={bit}: a uint32 key has bits 0 to 31")
    n = keys.size
    if n == 0:
        return keys.copy()
    REGISTRY.resolve("split1_global", backend)
    K = host.provider(backend, {"SCAN_BLOCK": block})
    flags, pos = cuda.device_array(n, np.int32), cuda.device_array(n, np.int32)
    d_in, d_out, dummy = cuda.to_device(keys), cuda.device_array(n, np.uint32), cuda.device_array(1, np.uint32)
    g = host.grid_1d(n, host.EW_BLOCK)
    K("split_flags", g, (host.EW_BLOCK,), d_in, np.int32(n), np.int32(bit), flags)
    host.ScanPlan(K, n, block).run(flags, pos)
    K("split_scatter", g, (host.EW_BLOCK,), d_in, dummy, d_out, dummy, pos, flags, np.int32(n), np.int32(bit), np.int32(0))
    return d_out.copy_to_host()


def variants(backend: str | None = None) -> list[str]:
    """Names of the registered variants (of one backend, or all)."""
    return list(dict.fromkeys(REGISTRY.names(backend)))
