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
PyTorch stream) queues the work behind the caller's; a CuPy or PyTorch array whose interface
names that same stream is not waited for (one that names another stream is, as the CUDA array
interface asks). The host waits for the device once in a sort, because the algorithm decides
there: onesweep (the default) for the flag of each pass that its digit offsets end with (which
passes run; one 4 KB copy, its first pass already queued behind it), the other variants for the largest key (the
early exit); `distinct` once more (its count), and a numpy caller for the copy of its result.
The CPU baseline (`backend="cpu"`) runs numpy on the host, so it copies device inputs there
and its results back.

What a call allocates. The work buffers of the last sort (a plan: two to four arrays as long as
the keys, in a `gpulab.launch.PlanCache`) are kept for the next call of the same size,
key-value shape, variant, parameters and stream; [`clear_cache`][gpulab.radix.clear_cache]
frees them. Numpy inputs are copied into those buffers, not into new device arrays. The
result is then the only allocation of a call, and `out=` removes it:

```python
d_keys = cupy.asarray(keys)
result = cupy.empty_like(d_keys)
rx.sort(d_keys, out=result)                  # the last pass writes `result`; returns it
rx.sort_pairs(k, v, out=(k_sorted, v_sorted))
rx.argsort(d_keys, out=cupy.empty(d_keys.size, cupy.int64))
```

`out` is an array of your own (numpy or any device library; C-contiguous, the input's length,
the result's dtype; a wrong one is one `ShapeError` / `DtypeError` naming the shape and dtype
expected), written and returned as it is. Without `out` the result is a new array that belongs
to the caller: no later call writes it. For a CuPy or PyTorch caller on the default stream it
comes from that library's memory pool, so a repeated call's result costs next to nothing; otherwise
from numba's allocator (`cuda.device_array`; numba's memory-manager plugins, e.g. RMM's pool,
make that a pool allocation for the whole process). The plan's buffers are never returned.
"""

from __future__ import annotations

import numpy as np

from gpulab.chapters import Chapter
from gpulab import device  # (first: selects GPU or simulator before numba loads)
from gpulab.arrays import (cupy_on_current_device, describe, device_empty, device_input, device_input_on,
                           device_result, is_device_array, kept_view, numba_stream, shape_dtype, to_caller, to_host)
from gpulab.launch import PlanCache, current_context
from gpulab.radix import host
from gpulab.radix.reference import (argsort_reference, distinct_reference, scan_reference, sort_reference,
                                    split_reference)
from gpulab.radix.variants import LARGE_DEFAULTS, REGISTRY

__all__ = ["CHAPTER", "sort", "argsort", "sort_pairs", "distinct", "scan", "split", "plan", "variants", "default_variant",
           "key_limit", "clear_cache", "clear_plan_cache", "REGISTRY",
           "sort_reference", "argsort_reference", "distinct_reference", "scan_reference", "split_reference"]

DEFAULT_VARIANT = REGISTRY.default("numba")  # the GPU backends' default (onesweep: the fastest measured)
FALLBACK_VARIANT = REGISTRY.fallbacks["numba"]  # what a call naming no variant runs on the simulator


_PLANS = PlanCache(maxsize=1)  # one plan at a time: each holds buffers several times the size of the keys
_LAUNCH: dict = {}  # (variant, backend, params) -> (Variant, launch parameters, their key): resolved once
_LAUNCH_MAX = 256


def _launch(variant, backend, params):
    """The variant, launch parameters and their cache key of a call, looked up once per
    `(variant, backend, params)`: the registry, the backend's default and the parameters' dict
    are per-call host work otherwise."""
    try:
        key = (variant, backend, tuple(sorted(params.items())) if params else ())
        hit = _LAUNCH.get(key)
    except TypeError:  # a parameter value that cannot be a dict key: resolved every call
        key, hit = None, None
    if hit is None:
        v = _resolve(variant, backend)
        p = v.launch_params(params)
        hit = (v, p, tuple(sorted(p.items())))
        if key is not None and len(_LAUNCH) < _LAUNCH_MAX:
            _LAUNCH[key] = hit
    return hit


def _plan(v, n, has_vals, p, pkey, stream, distinct=False, ctx=None, tag=None):
    """The plan for this call: the last one, when it was made for the same call shape in the
    same CUDA context (its buffers are reused: on one stream, one sort after the other), else a
    new one. `ctx`: the current context where the caller has it already; `tag`: the caller's
    arguments that decide the key, kept with the plan (`gpulab.launch.PlanCache.last`)."""
    if ctx is None:
        device.numba_context_current()  # (numba's: the one its plans' buffers and kernels live in)
        ctx = current_context()
    key = (v.name, v.backend, n, has_vals, pkey, int(stream) if stream else 0, distinct, ctx)

    def build():
        plan = v.run(n, has_vals, p, stream=stream)
        return host.distinct_plan(plan) if distinct else plan

    return _PLANS.get(key, build, tag)


def clear_cache() -> None:
    """Free the work buffers the public functions keep between calls (the last sort plan, a
    `gpulab.launch.PlanCache`), forget the variants they resolved and the views of other
    libraries' arrays (`gpulab.arrays.clear_views`)."""
    from gpulab.arrays import clear_views

    _PLANS.clear()
    _LAUNCH.clear()
    clear_views()


clear_plan_cache = clear_cache  # the earlier name


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
    v = _resolve(_sized(variant, backend, int(n)), backend)
    if v.backend == "cpu":
        raise GpulabError(f"a sort plan runs on the device: backend must be 'numba' or 'cuda-c', got {backend!r}")
    return v.run(int(n), bool(pairs), v.launch_params(params), stream=numba_stream(stream))


def key_limit(variant: str, backend: str) -> int | None:
    """The most keys one sort of `variant` takes (`None`: no limit of its own, only the int32
    index limit of every sort): onesweep's look-back packs counts in 30 bits, so 2^30 keys (a tile reads only earlier
    tiles' running counts, which hold fewer keys than the sort)."""
    return REGISTRY.get(variant, backend).policy.max_keys


def default_variant(n: int, backend: str = "numba") -> str:
    """What a sort of `n` keys naming no variant runs on `backend`: the backend's default
    (onesweep on a GPU, the fastest measured), or for more keys than that default sorts, the
    fastest variant without its limit (`local`); on the simulator, the quicker-to-simulate
    fallback. `params` given to a call that names no variant go to whichever variant this
    picks, `local` too past onesweep's limit."""
    v = REGISTRY.resolve(None, backend)
    limit = v.policy.max_keys
    if limit is not None and n > limit and backend in LARGE_DEFAULTS:
        return REGISTRY.resolve(LARGE_DEFAULTS[backend], backend).name
    return v.name


_SMALLEST_LIMIT = min((v.policy.max_keys for v in REGISTRY if v.policy.max_keys is not None), default=None)


def _sized(variant, backend, n: int):
    """`variant`, or for a call naming none with more keys than some default sorts, the variant
    for its size ([`default_variant`][gpulab.radix.default_variant]); below every limit the
    registry's default is resolved as before (no work per call)."""
    if variant is None and _SMALLEST_LIMIT is not None and n > _SMALLEST_LIMIT:
        return default_variant(n, backend)
    return variant


def _resolve(variant, backend):
    """The variant to run: `None` is the backend's default (`REGISTRY.default(backend)`), on the
    simulator (or where the default cannot run) the registry's fallback (`FALLBACK_VARIANT`)
    for the GPU backends."""
    return REGISTRY.resolve(variant, backend)


def _sorted(keys, values, variant, backend, params, iota, stream, out=(None, None), checked=None):
    """The sort behind sort / argsort / sort_pairs. Returns `(keys, values)` in the caller's kind:
    keys and values in their dtypes (argsort: int64 positions); `None` when not asked
    for. `out`: the caller's arrays for them (already checked), `None` where the result is new.
    `checked`: `host.validate_keys(keys)` where the caller already has it, followed by
    `host.validate_values(n, values)` when it has that too. Without it, CuPy inputs whose views
    are kept and a call on the default stream are checked and taken in one look-up each
    (`_kept_inputs`); anything else the full way."""
    # CuPy arrays seen before, on the default stream: checked, and taken, in one look-up each
    kept = _kept_inputs(keys, values, 0) if checked is None and stream is None else None
    if kept is not None:
        n, dtype, vdtype, kin, vkin = kept
    else:
        n, dtype, *vchecked = checked or host.validate_keys(keys)
        # a numpy dtype (torch's is not)
        vdtype = vchecked[0] if vchecked else (host.validate_values(n, values) if values is not None else None)
    has_vals = values is not None or iota
    v, p, pkey = _launch(_sized(variant, backend, n), backend, params)
    if v.backend == "cpu":
        return _filled(_sorted_on_cpu(keys, values, dtype, vdtype, v, p, iota), out)
    s = numba_stream(stream)
    if n == 0:
        like = describe(keys, values)
        empty = (_empty(dtype, like, s), _empty(np.int64 if iota else vdtype, like, s) if has_vals else None)
        return _filled(empty, out)
    plan = _plan(v, n, has_vals, p, pkey, s)
    # Host inputs are copied into the plan's buffers that only the first pass reads
    scratch = plan.scratch
    ordered = host.order_on_device(kin if kept else _take(keys, "keys", scratch, s), dtype, scratch, s)
    if values is not None:
        vin = _as(vkin if kept else _take(values, "values", plan.values_scratch, s), np.uint32)
    else:
        vin = None
    if iota:
        _, pos = plan.sort(ordered, None, iota=True)
        return None, _positions(pos, out[1], describe(keys, values), s)
    # The last pass writes the results where the caller gets them (the caller's device arrays,
    # or new ones), unless one of them has to be copied anyway (a host result, an `out` that
    # overlaps an input the sort reads): then the plan's buffers, copied below. The plan asks
    # for them when every pass but the last is queued: a new result is allocated, and who gets
    # it found out (`describe`), while the GPU sorts.
    t = {}

    def targets():
        like = t["like"] = describe(keys, values)
        t["k"] = _target(out[0], n, dtype, like, s, (ordered, vin))
        t["v"] = _target(out[1], n, vdtype, like, s, (ordered, vin)) if values is not None else (None, True, None)
        t["direct"] = t["k"][1] and t["v"][1]
        return (t["k"][0], t["v"][0]) if t["direct"] else None

    dk, dv = plan.sort(ordered, vin, out=targets)
    (kt, _, kgive), (vt, _, vgive), direct, like = t["k"], t["v"], t["direct"], t["like"]
    host.unorder_on_device(dk, dtype, s)  # in place: the bits of the keys in their dtype
    return (_deliver(dk, dtype, out[0], kt, direct, like, s, kgive),
            _deliver(dv, vdtype, out[1], vt, direct, like, s, vgive) if values is not None else None)


# --8<-- [start:by_addresses]
def _by_addresses(keys, values, variant, backend, params, distinct=False):
    """`sort` / `sort_pairs` / `distinct` of CuPy arrays that need none of the full path's
    work, or `None` (take the full path, which also names what is wrong with the inputs).

    Where the keys are a C-contiguous uint32 CuPy vector of 2 or more keys (the values: one of
    4-byte items as long), on the current device, with CuPy's null stream current (the plan's
    stream) and a one-sweep variant, the plan's kept launches take the arrays by address
    ([`SortPlan.kept`][gpulab.radix.host.SortPlan]): no array interface is read and no numba
    view made as a rule (the plan's rare copies into the result view it), and the result comes
    from CuPy's pool when the sort asks for it, behind its queued passes. The launches,
    buffers and waits are the full path's."""
    cupy = cupy_on_current_device(keys, values)  # (C-contiguous CuPy arrays, current device, null stream)
    if cupy is None or keys.dtype is not _U32 or keys.ndim != 1:
        return None
    n = keys.size
    if not 2 <= n <= _BY_ADDRESSES_MAX:
        return None
    if values is not None and (values.size != n or values.ndim != 1 or values.itemsize != 4):
        return None
    ctx = current_context()
    if not ctx:  # (no context current in this thread yet: the full path makes one current)
        return None
    # The last plan, found by the call's own arguments (`PlanCache.last`: no key made, no variant
    # resolved; a prototype's look-up of that kind took 0.5 us after a synchronised sort against
    # 1.9 for `_launch` and `_plan`, H200 host) where `params` is None (a dict of the caller's
    # could change between two calls and stay the same object)
    tag = (variant, backend, n, values is not None, distinct, ctx) if params is None else None
    plan = _PLANS.last(tag) if tag is not None else None
    if plan is None:
        v, p, pkey = _launch(variant, backend, params)
        if not v.policy.histograms_first:  # (one-sweep: the family whose launches a plan keeps)
            return None
        plan = _plan(v, n, values is not None, p, pkey, 0, distinct, ctx, tag)
    new = cupy.ndarray  # (the constructor itself: `cupy.empty`'s own layer took another 1 us of host time)
    if distinct:
        out, count = plan.run(keys, out=lambda: new(n, _U32))
        # the count's first keys, over the result's memory (which the array keeps alive): after
        # the call's one wait every us is the GPU's; a slice took 4.8 us, this 2.6 (H200 host)
        return new(count, _U32, out.data)
    made = []
    vin = values if values is None or values.dtype is _U32 else values.view(_U32)  # (bits)

    def target():  # asked for when every pass but the last is queued
        made.extend((new(n, _U32), None if values is None else new(n, _U32)))
        return made

    plan.sort(keys, vin, out=target)
    if vin is not values:
        made[1] = made[1].view(values.dtype)
    return made
# --8<-- [end:by_addresses]


_U32 = np.dtype(np.uint32)  # (CuPy's dtypes of the native types are numpy's own objects: `is` compares them)
_BY_ADDRESSES_MAX = min(host.INT32_MAX, _SMALLEST_LIMIT or host.INT32_MAX)  # (more: `_sized` picks the variant)


def _kept_inputs(keys, values, s):
    """`(n, dtype, values' dtype, keys' view, values' view)` for device inputs whose numba views
    are kept (`gpulab.arrays.kept_view`: CuPy arrays seen before), with the checks of
    `host.validate_keys` and `host.validate_values` that a kept view does not already imply; `None`
    where an input is not such an array, or fails a check (the full way then takes it, and names
    what is wrong). A public call on arrays it has sorted before thus reaches its first launch
    through two look-ups instead of the checks' and `_take`'s function layers (issue 30)."""
    kv = kept_view(keys, s)
    if kv is None or kv.ndim != 1 or kv.dtype not in host.KEY_DTYPE_SET or not 0 < kv.shape[0] <= host.INT32_MAX:
        return None
    n = kv.shape[0]
    if values is None:
        return n, kv.dtype, None, kv, None
    vv = kept_view(values, s)
    if vv is None or vv.shape != (n,) or vv.dtype.itemsize != 4:
        return None
    return n, kv.dtype, vv.dtype, kv, vv


def _take(x, name, buffer, s):
    """An input as a numba device array: a device array without a copy (numba's own as it is,
    never waited for, as numba's own launches do not wait; another library's waited for only
    where its interface names a stream other than `s`); a host array copied into `buffer` (a
    plan's uint32 buffer of its length, read by the first pass)."""
    if not is_device_array(x):
        buffer.copy_to_device(np.ascontiguousarray(x).view(np.uint32), stream=s)
        return _as(buffer, x.dtype)
    return device_input_on(x, name, stream=s).array


def _as(a, dtype):
    """`a` viewed as `dtype` (itself when it has that dtype: a view of a device array is host work)."""
    return a if a.dtype == dtype else a.view(dtype)


def _target(o, n, dtype, like, s, reads):
    """Where one result goes: `(a numba uint32 array on the device, or None for the host;
    whether the sort's last pass may write it; for a new device result, a function that gives
    the caller its array once the sort is queued, else None)`. A device caller without `out`
    gets a new array of `dtype` (`gpulab.arrays.device_result`: from CuPy's or PyTorch's pool on
    the default stream, through a kept view of its memory, so a call that gets the same block as
    the call before makes no new view; else numba's allocation, handed over by `to_caller` only
    then: taking a stream-bound numba array into another library may wait for the stream)."""
    if o is None:
        if not like.on_device:
            return None, False, None
        arr, made = device_result(n, dtype, like, s)
        give = (lambda: made) if made is not None else (lambda: to_caller(arr, like, s))
        return _as(arr, np.uint32), True, give
    if not is_device_array(o):
        return None, False, None
    t = _as(_take(o, "out", None, s), np.uint32)
    return t, not any(host.overlap(t, r) for r in reads), None


def _deliver(res, dtype, o, t, written, like, s, give=None):
    """One result (`res`, the uint32 bits on the device) to the caller: into `t` (the caller's
    device `out`, or a new device array, whose `give()` is what the caller gets: `_target`)
    unless the sort `written` it there, else into the caller's numpy `out`, else a new numpy
    array. Returns the caller's `out` when given."""
    if t is not None:
        if not written:
            t.copy_to_device(res, stream=s)
        return o if o is not None else give()
    if o is None:
        return to_caller(_as(res, dtype), False, s)
    res.copy_to_host(o.view(np.uint32), stream=s)
    if s:
        s.synchronize()
    return o


def _positions(pos, o, like, s):
    """argsort's uint32 positions (a plan buffer) as int64: widened on the device into the
    caller's device `out` or a new device array, or on the host into numpy."""
    if o is not None and is_device_array(o):
        host.widen_on_device(pos, s, out=_take(o, "out", None, s))
        return o
    if o is None and like.on_device:
        return to_caller(host.widen_on_device(pos, s, out=device_empty(pos.shape[0], np.int64, like, s)), like, s)
    widened = to_caller(pos, False, s).astype(np.int64)
    if o is None:
        return widened
    o[...] = widened
    return o


def _filled(results, out):
    """Results made elsewhere (the CPU baseline, empty sorts) copied into the caller's `out`
    arrays where given: `out` is returned for them."""
    return tuple(r if o is None else _copy_into(o, r) for r, o in zip(results, out))


def _copy_into(o, r):
    """A result made on the host (or an empty one) into the caller's `out` (same length and
    item size: the bits are copied)."""
    shape, dtype = shape_dtype(o)
    if not shape[0]:
        return o
    r = np.ascontiguousarray(to_host(r)).view(dtype)
    if is_device_array(o):
        _take(o, "out", None, 0).copy_to_device(r)  # from pageable memory on stream 0: complete on return
    else:
        o[...] = r
    return o


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


def _sorted_on_cpu(keys, values, dtype, vdtype, v, p, iota):
    """The numpy baseline: on the host (device inputs are copied there, results copied back)."""
    k = to_host(keys)
    plan = v.run(k.size, values is not None or iota, p)
    sk, sv = plan.sort(host.to_ordered(k), to_host(values).view(np.uint32) if values is not None else None, iota=iota)
    vals = sv.astype(np.int64) if iota else (sv.view(vdtype) if values is not None else sv)
    out = (host.from_ordered(sk, dtype) if k.size else k.copy(), vals)
    return _on_cpu(out, describe(keys, values))


def _check_out(out, name, n, dtype, what):
    """The caller's array for a result: a C-contiguous numpy or device array of shape `(n,)` and
    `dtype`, else one clear error naming what was expected."""
    from gpulab.errors import DtypeError, ShapeError

    dtype = np.dtype(dtype)

    def want():  # the message is built only for an error (a call with out= checks it every time)
        return f"{name} must be a C-contiguous numpy or device array of shape ({n},) and dtype {dtype} ({what})"

    if not (isinstance(out, np.ndarray) or is_device_array(out)):
        raise ShapeError(f"{want()}, got {type(out).__name__}")
    shape, got = shape_dtype(out)
    if shape != (n,):
        raise ShapeError(f"{want()}, got shape {shape}")
    if got != dtype:
        raise DtypeError(f"{want()}, got dtype {got}")
    contiguous = out.flags["C_CONTIGUOUS"] if isinstance(out, np.ndarray) else _contiguous(out)
    if not contiguous or (isinstance(out, np.ndarray) and not out.flags.writeable):
        raise ShapeError(f"{want()}, got a {'read-only' if contiguous else 'non-contiguous'} array")
    return out


def _contiguous(x) -> bool:
    from gpulab.arrays import _c_contiguous

    return x.is_c_contiguous() if hasattr(x, "is_c_contiguous") else _c_contiguous(x.__cuda_array_interface__)


# --8<-- [start:entry]
def sort(keys, variant: str | None = None, backend: str = "numba", params: dict | None = None, stream=None, *,
         out=None):
    """Stable sort of uint32 / int32 / float32 keys on the GPU (or the simulator).

    Args:
        keys: 1-D array of uint32, int32 or float32 (any length, including 0 and 1): numpy,
            or a device array (CuPy, PyTorch CUDA tensor, numba), sorted where it lies.
        variant: a name from `gpulab.radix.variants()`; `None` picks the backend's default:
            `"onesweep"` on a GPU (the fastest measured; `"local"` for 2^30 keys or more, past
            onesweep's limit: [`default_variant`][gpulab.radix.default_variant]),
            `"radix4_shared"` on the simulator (quicker to simulate), `"numpy"` for `backend="cpu"`.
        backend: `"numba"`, `"cuda-c"` or `"cpu"` (numpy on the host).
        params: overrides of the variant's compile-time parameters (block sizes, digit bits ...).
        stream: a numba, CuPy or PyTorch stream to run on (default: the default stream).
        out: an array of your own for the result: C-contiguous, shape `(len(keys),)`, the keys'
            dtype; numpy or a device array of any library. The sort writes it (on the device,
            its last pass does: no allocation at all) and returns `out` itself. It may be
            `keys` itself (an in-place sort; uint32 keys, which the first pass reads where they
            lie, then reach it by one more device copy).

    Returns:
        The sorted keys, same dtype: `out` when given; else a new array you own (no later call
        writes it): numpy for numpy keys, for device keys a new device array of the caller's
        library (the input is left unchanged).

    Raises:
        ShapeError, DtypeError, LimitError: the input (or `out`) does not fit the kernels (the message says which limit).
        BackendUnavailable: the variant cannot run here (the message says why).
    """
    if out is None and stream is None:  # CuPy keys that need no checks beyond a few attributes
        made = _by_addresses(keys, None, variant, backend, params)
        if made is not None:
            return made[0]
    checked = None
    if out is not None:
        checked = n, dtype = host.validate_keys(keys)
        _check_out(out, "out", n, dtype, "the sorted keys")
    return _sorted(keys, None, variant, backend, params, False, stream, (out, None), checked)[0]
# --8<-- [end:entry]


def argsort(keys, variant: str | None = None, backend: str = "numba", params: dict | None = None, stream=None, *,
            out=None):
    """Stable argsort: int64 indices, like `numpy.argsort(kind="stable")`; numpy for numpy
    keys, a device array of the caller's library for device keys, or `out` (an int64 array
    of your own, numpy or device, of the keys' length: filled and returned)."""
    checked = None
    if out is not None:
        checked = host.validate_keys(keys)
        _check_out(out, "out", checked[0], np.int64, "the argsort's indices")
    return _sorted(keys, None, variant, backend, params, True, stream, (None, out), checked)[1]


def sort_pairs(keys, values, variant: str | None = None, backend: str = "numba", params: dict | None = None,
               stream=None, *, out=None):
    """Sort `keys` stably and move `values` (any 4-byte dtype) with them.

    Returns `(keys, values)`: numpy when both inputs are numpy arrays, else device arrays of
    the first device input's library; new arrays you own. `out=(keys_out, values_out)`: two
    arrays of your own (numpy or device, C-contiguous, the inputs' length and dtypes), filled
    and returned as that pair; on the device the last pass writes them (no allocation)."""
    if out is None and values is not None:  # checked in `_sorted` (one look-up each for arrays taken before)
        made = _by_addresses(keys, values, variant, backend, params) if stream is None else None
        return tuple(made) if made is not None else _sorted(keys, values, variant, backend, params, False, stream)
    n, kdtype = host.validate_keys(keys)
    vdtype = host.validate_values(n, values)  # (values=None: its error)
    if not (isinstance(out, (tuple, list)) and len(out) == 2):
        from gpulab.errors import ShapeError

        raise ShapeError(f"out must be a pair (keys_out, values_out) of arrays of shape ({n},) and dtypes "
                         f"{kdtype} and {vdtype}, got {type(out).__name__}")
    _check_out(out[0], "out[0]", n, kdtype, "the sorted keys")
    _check_out(out[1], "out[1]", n, vdtype, "the values")
    return _sorted(keys, values, variant, backend, params, False, stream, tuple(out), (n, kdtype, vdtype))


def distinct(keys, variant: str | None = None, backend: str = "numba", params: dict | None = None, stream=None):
    """The distinct keys in ascending order (`numpy.unique`): sort, flag run heads, scan,
    compact. numpy for numpy keys; for device keys a device array of the caller's library: a
    view of the first `count` elements (the number of distinct keys) of a new array of
    `len(keys)`, which the view keeps alive (for uint32 CuPy keys: a CuPy array of `count`
    elements over that array's memory, which it holds). Raises `LimitError` past 2^31 - 2 keys (its scan
    covers one element more than the keys, with int32 indices), as `sort` does for its limits."""
    if stream is None:
        result = _by_addresses(keys, None, variant, backend, params, distinct=True)
        if result is not None:
            return result
    # CuPy keys seen before, on the default stream: checked and taken in one look-up (as `_sorted`)
    kept = _kept_inputs(keys, None, 0) if stream is None else None
    n, dtype = kept[:2] if kept is not None else host.validate_keys(keys)
    v, p, pkey = _launch(_sized(variant, backend, n), backend, params)
    s = numba_stream(stream)
    if v.backend == "cpu":
        k = to_host(keys)
        out, _ = host.distinct_plan(v.run(k.size, False, p)).run(host.to_ordered(k))
        return _on_cpu((host.from_ordered(out, dtype),), describe(keys))[0]
    if n == 0:
        return _empty(dtype, describe(keys), s)
    host.check_distinct_size(n)  # before the sort plan's buffers are allocated
    plan = _plan(v, n, False, p, pkey, s, distinct=True)
    scratch = plan.sp.scratch
    ordered = host.order_on_device(kept[3] if kept is not None else _take(keys, "keys", scratch, s), dtype, scratch, s)
    # A device caller's result is a new array (`device_result`: from its library's pool where it
    # has one), asked for once the sort is queued: found while the GPU sorts, not before it or
    # after the count's wait. A host caller's is copied from the plan's buffer.
    t = {}

    def target():  # sort's new result (`_target`), or None for the host: the plan's buffer
        like = t["like"] = describe(keys)
        arr, _, t["give"] = _target(None, n, dtype, like, s, ())
        return arr

    out, count = plan.run(ordered, out=target)
    if not t["like"].on_device:
        return to_caller(host.unorder_on_device(out[:count], dtype, s), False, s)
    if dtype != np.uint32 and count:
        host.unorder_on_device(out[:count], dtype, s)  # in place, the caller's memory
    # the first `count` keys: a slice in the caller's library (CuPy's, PyTorch's: a few
    # microseconds; a numba array's slice takes 30-50 us of host time)
    return t["give"]()[:count]


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
