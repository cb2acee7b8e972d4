"""Chapter 4: radix sort — split, scan and scatter, from one bit in global memory to keys in
registers ranked by warp intrinsics.

```python
import numpy as np, gpulab.radix as rx
keys = np.random.default_rng().integers(0, 2**32, 1000, dtype=np.uint32)
out = rx.sort(keys, variant="radix4_shared")     # numpy in, numpy out
out = rx.sort(cupy.asarray(keys))                # CuPy in, CuPy out: sorted where it lies
```

Keys are uint32, int32 or float32 (32-bit keys; signed and float keys go through an
order-preserving bit transform on the device, whose numpy statement is
[`to_ordered`][gpulab.radix.host.to_ordered]). Every sort is stable. NaNs sort last, after
+inf, in input order (as `numpy.sort` puts them); `sort` returns them as the NaN with bits
0x7FFFFFFF, and -0.0 as +0.0 (numpy compares them equal).

Every function takes numpy arrays or device arrays (CuPy, PyTorch CUDA tensors, numba device
arrays) and returns the same kind: numpy in → numpy out; device in → a device array of the
caller's library, computed without a host copy of the input. `stream=` (a numba, CuPy or
PyTorch stream) queues the work behind the caller's; the host still waits for the device once
in a sort (for the largest key, for the early exit; onesweep for its 4 KB of digit offsets,
which say which passes run), and once more in `distinct` (its count).
The CPU baseline (`backend="cpu"`) runs numpy on the host, so it copies device inputs there
and its results back.

The work buffers of the last sort (a plan: two to four arrays as long as the keys) are kept for
the next call of the same size, variant and stream, so a pipeline that sorts repeatedly
allocates only its results; [`clear_plan_cache`][gpulab.radix.clear_plan_cache] frees them.
"""

from __future__ import annotations

import numpy as np

from gpulab.chapters import Chapter
from gpulab import device  # noqa: F401  (selects GPU or simulator before numba loads)
from gpulab.arrays import caller_of, describe, device_input, numba_stream, to_caller, to_host
from gpulab.launch import PlanCache
from gpulab.radix import host
from gpulab.radix.reference import (argsort_reference, distinct_reference, scan_reference, sort_reference,
                                    split_reference)
from gpulab.radix.variants import REGISTRY

__all__ = ["CHAPTER", "sort", "argsort", "sort_pairs", "distinct", "scan", "split", "plan", "variants", "clear_plan_cache", "REGISTRY",
           "sort_reference", "argsort_reference", "distinct_reference", "scan_reference", "split_reference"]

DEFAULT_VARIANT = REGISTRY.default("numba")  # the GPU backends' default (onesweep: the fastest measured)
# On the simulator: warp intrinsics run there (gpulab.simwarp), but every lane of the default
# 256-thread blocks is a Python thread meeting at a barrier per intrinsic; radix4_shared is
# the quicker of the exact sorts to simulate.
FALLBACK_VARIANT = "radix4_shared"


_PLANS = PlanCache(maxsize=1)  # one plan at a time: each holds buffers several times the size of the keys


def _plan(v, n, has_vals, params, stream, distinct=False):
    """The plan for this call: the last one, when it was made for the same call shape (its
    buffers are reused: on one stream, one sort after the other), else a new one."""
    key = (v.key, n, has_vals, tuple(sorted(params.items())), int(stream) if stream else 0, distinct)

    def build():
        plan = v.run(n, has_vals, params, stream=stream)
        return host.distinct_plan(plan) if distinct else plan

    return _PLANS.get(key, build)


def clear_plan_cache() -> None:
    """Free the work buffers the public functions keep between calls."""
    _PLANS.clear()


def plan(n: int, *, pairs: bool = False, variant: str | None = None, backend: str = "numba",
         params: dict | None = None, stream=None) -> host.SortPlan:
    """A sort plan of your own: the buffers and launches of one variant's sort of `n` keys,
    reused by every call of its [`sort`][gpulab.radix.host.SortPlan.sort] (the public
    functions keep only the last plan; a pipeline that sorts arrays of a few sizes keeps one
    plan per size). Chapter 5 pairs its edges through these.

    The plan sorts uint32 keys already on the device (numba device arrays, or views of the
    caller's arrays: `plan.sort(keys, values, iota=..., max_key=..., out=...)`); signed or float
    keys need the order-preserving transform the public functions apply
    ([`to_ordered`][gpulab.radix.host.to_ordered]).

    Args:
        n: the number of keys each sort takes (at most `n`: a plan sorts any prefix length).
        pairs: whether the sorts carry values (or, with `iota=True`, the keys' positions).
        variant: a GPU variant of `gpulab.radix.variants()`; `None`: the backend's default,
            as [`sort`][gpulab.radix.sort] picks it.
        backend: `"numba"` or `"cuda-c"`.
        params: overrides of the variant's compile-time parameters.
        stream: a numba, CuPy or PyTorch stream its launches and copies go to.

    Raises:
        GpulabError: `backend="cpu"` (a plan lives on the device), or a bad `n`.
        LimitError, BackendUnavailable: as [`sort`][gpulab.radix.sort].
    """
    from gpulab.errors import DtypeError, GpulabError

    if isinstance(n, bool) or not isinstance(n, (int, np.integer)) or n < 0:
        raise DtypeError(f"n must be a whole number of keys >= 0, got {n!r}")
    v = _resolve(variant, backend)
    if v.backend == "cpu":
        raise GpulabError(f"a sort plan runs on the device: backend must be 'numba' or 'cuda-c', got {backend!r}")
    return v.run(int(n), bool(pairs), v.launch_params(params), stream=numba_stream(stream))


def _resolve(variant, backend):
    """The variant to run: `None` is the backend's default (`REGISTRY.default(backend)`), on the
    simulator (or where the default cannot run) FALLBACK_VARIANT for the GPU backends."""
    if variant is None:
        variant = REGISTRY.default(backend)
        if backend != "cpu" and (device.on_simulator() or REGISTRY.get(variant, backend).unavailable_reason()):
            variant = FALLBACK_VARIANT
    return REGISTRY.resolve(variant, backend)


def _sorted(keys, values, variant, backend, params, iota, stream):
    """The sort behind sort / argsort / sort_pairs. Returns `(keys, values)` in the caller's kind:
    keys in their dtype, values as uint32 bits (positions for `iota`); `None` when not asked for."""
    n, dtype = host.validate_keys(keys)
    has_vals = values is not None or iota
    if values is not None:
        host.validate_values(n, values)
    v = _resolve(variant, backend)
    p = v.launch_params(params)
    s = numba_stream(stream)
    if v.backend == "cpu":
        return _sorted_on_cpu(keys, values, dtype, v, p, iota)
    kin = device_input(keys, "keys", stream=s)
    vin = device_input(values, "values", stream=s) if values is not None else None
    like = caller_of(kin, vin) if vin is not None else kin
    if n == 0:
        return _empty(dtype, like, s), (_empty(np.int64 if iota else np.uint32, like, s) if has_vals else None)
    from numba import cuda

    plan = _plan(v, n, has_vals, p, s)
    ordered = host.order_on_device(kin.array, dtype, plan.scratch, s)
    out = (cuda.device_array(n, np.uint32, stream=s), cuda.device_array(n, np.uint32, stream=s) if has_vals else None)
    dk, dv = plan.sort(ordered, vin.array.view(np.uint32) if vin is not None else None, iota=iota, out=out)
    out_keys = to_caller(host.unorder_on_device(dk, dtype, s), like, s)
    if not has_vals:
        return out_keys, None
    if iota and like.on_device:
        dv = host.widen_on_device(dv, s)  # argsort's int64 indices, on the device
    return out_keys, to_caller(dv, like, s)


def _empty(dtype, like, stream):
    """A new empty result of the caller's kind."""
    from numba import cuda

    return to_caller(cuda.device_array(0, dtype), like, stream) if like.on_device else np.empty(0, dtype)


def _on_cpu(results, like):
    """Results the numpy baseline computed on the host, returned the caller's way."""
    from numba import cuda

    if not like.on_device:
        return results
    return tuple(None if a is None else to_caller(cuda.to_device(np.ascontiguousarray(a)), like) for a in results)


def _sorted_on_cpu(keys, values, dtype, v, p, iota):
    """The numpy baseline: on the host (device inputs are copied there, results copied back)."""
    k = to_host(keys)
    plan = v.run(k.size, values is not None or iota, p)
    sk, sv = plan.sort(host.to_ordered(k), to_host(values).view(np.uint32) if values is not None else None, iota=iota)
    out = (host.from_ordered(sk, dtype) if k.size else k.copy(), sv.astype(np.int64) if iota else sv)
    return _on_cpu(out, describe(keys, values))


# --8<-- [start:entry]
def sort(keys, variant: str | None = None, backend: str = "numba", params: dict | None = None, stream=None):
    """Stable sort of uint32 / int32 / float32 keys on the GPU (or the simulator).

    Args:
        keys: 1-D array of uint32, int32 or float32 (any length, including 0 and 1): numpy,
            or a device array (CuPy, PyTorch CUDA tensor, numba), sorted where it lies.
        variant: a name from `gpulab.radix.variants()`; `None` picks the backend's default:
            `"onesweep"` on a GPU (the fastest measured), `"radix4_shared"` on the simulator
            (quicker to simulate), `"numpy"` for `backend="cpu"`.
        backend: `"numba"`, `"cuda-c"` or `"cpu"` (numpy on the host).
        params: overrides of the variant's compile-time parameters (block sizes, digit bits ...).
        stream: a numba, CuPy or PyTorch stream to run on (default: the default stream).

    Returns:
        The sorted keys, same dtype: numpy for numpy keys; for device keys a new device array
        of the caller's library (the input is left unchanged).

    Raises:
        ShapeError, DtypeError, LimitError: the input does not fit the kernels (the message says which limit).
        BackendUnavailable: the variant cannot run here (the message says why).
    """
    return _sorted(keys, None, variant, backend, params, False, stream)[0]
# --8<-- [end:entry]


def argsort(keys, variant: str | None = None, backend: str = "numba", params: dict | None = None, stream=None):
    """Stable argsort: int64 indices, like `numpy.argsort(kind="stable")`; numpy for numpy
    keys, a device array of the caller's library for device keys."""
    return _sorted(keys, None, variant, backend, params, True, stream)[1]


def sort_pairs(keys, values, variant: str | None = None, backend: str = "numba", params: dict | None = None,
               stream=None):
    """Sort `keys` stably and move `values` (any 4-byte dtype) with them.

    Returns `(keys, values)`: numpy when both inputs are numpy arrays, else device arrays of
    the first device input's library."""
    vdtype = host.validate_values(host.validate_keys(keys)[0], values)
    k, v = _sorted(keys, values, variant, backend, params, False, stream)
    return k, v.view(vdtype)


def distinct(keys, variant: str | None = None, backend: str = "numba", params: dict | None = None, stream=None):
    """The distinct keys in ascending order (`numpy.unique`): sort, flag run heads, scan,
    compact. numpy for numpy keys; a device array of the caller's library for device keys."""
    n, dtype = host.validate_keys(keys)
    v = _resolve(variant, backend)
    p = v.launch_params(params)
    s = numba_stream(stream)
    if v.backend == "cpu":
        k = to_host(keys)
        out, _ = host.distinct_plan(v.run(k.size, False, p)).run(host.to_ordered(k))
        return _on_cpu((host.from_ordered(out, dtype),), describe(keys))[0]
    kin = device_input(keys, "keys", stream=s)
    if n == 0:
        return _empty(dtype, kin, s)
    from numba import cuda

    plan = _plan(v, n, False, p, s, distinct=True)
    ordered = host.order_on_device(kin.array, dtype, plan.sp.scratch, s)
    out, count = plan.run(ordered, out=cuda.device_array(n, np.uint32, stream=s))
    return to_caller(host.unorder_on_device(out[:count], dtype, s), kin, s)


def scan(x, inclusive: bool = False, method: str = "blelloch", backend: str = "numba", block: int = 256,
         stream=None):
    """Prefix sums of int32 / uint32 values (wrapping like 32-bit integers), any length.

    `method` is `"blelloch"` (work-efficient) or `"hillis_steele"`; `block` is the threads
    per block (a power of two). numpy in → numpy out; device in → a device array of the
    caller's library.
    """
    from numba import cuda

    from gpulab.arrays import check_array
    from gpulab.errors import DtypeError

    shape, dtype = check_array(x, "x", ndim=1)
    if dtype not in (np.int32, np.uint32):
        raise DtypeError(f"x has dtype {dtype}; scan is written for int32 and uint32")
    host.check_params({"SCAN_BLOCK": block})
    REGISTRY.resolve("split1_global", backend)  # raises BackendUnavailable with the reason
    s = numba_stream(stream)
    xin = device_input(x, "x", stream=s)
    n = shape[0]
    if n == 0:
        return _empty(dtype, xin, s)
    K = host.provider(backend, {"SCAN_BLOCK": block}, s)
    plan = host.ScanPlan(K, n, block, method)
    out = cuda.device_array(n, np.int32, stream=s)
    plan.run(xin.array.view(np.int32), out, inclusive)
    return to_caller(out.view(dtype), xin, s)


def split(keys, bit: int, backend: str = "numba", block: int = 256, stream=None):
    """The stable partition of uint32 keys by one bit (GPU Gems 3, ch. 39): flag, scan, scatter.
    numpy in → numpy out; device in → a device array of the caller's library."""
    from numba import cuda

    from gpulab.errors import DtypeError, LimitError

    n, dtype = host.validate_keys(keys)
    if dtype != np.uint32:
        raise DtypeError(f"split takes uint32 keys, got {dtype}")
    if not 0 <= bit < 32:
        raise LimitError(f"bit={bit}: a uint32 key has bits 0 to 31")
    REGISTRY.resolve("split1_global", backend)
    s = numba_stream(stream)
    kin = device_input(keys, "keys", stream=s)
    if n == 0:
        return _empty(dtype, kin, s)
    K = host.provider(backend, {"SCAN_BLOCK": block}, s)
    flags, pos = cuda.device_array(n, np.int32, stream=s), cuda.device_array(n, np.int32, stream=s)
    d_out, dummy = cuda.device_array(n, np.uint32, stream=s), cuda.device_array(1, np.uint32, stream=s)
    g = host.grid_1d(n, host.EW_BLOCK)
    K("split_flags", g, (host.EW_BLOCK,), kin.array, np.int32(n), np.int32(bit), flags)
    host.ScanPlan(K, n, block).run(flags, pos)
    K("split_scatter", g, (host.EW_BLOCK,), kin.array, dummy, d_out, dummy, pos, flags, np.int32(n), np.int32(bit),
      np.int32(0))
    return to_caller(d_out, kin, s)


def variants(backend: str | None = None) -> list[str]:
    """Names of the registered variants (of one backend, or all)."""
    return list(dict.fromkeys(REGISTRY.names(backend)))


# ----------------------------------------------------------------------------- the chapter


from gpulab.radix import bench as _bench, tour as _tour  # noqa: E402  (they use the API above)
from gpulab.radix.variants import cuda_builds as _cuda_builds, ptx_targets as _ptx_targets  # noqa: E402

CHAPTER = Chapter(name="radix", number=4, title="Radix sort", registry=REGISTRY,
                  ptx_targets=_ptx_targets, cuda_builds=_cuda_builds, bench=_bench.SPEC,
                  tour_cases=_tour.tour_cases, exercises="radix")
