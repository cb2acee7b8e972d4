"""Arrays in and out of gpulab's public functions: numpy on the host, or any device array.

Every public entry point of every chapter follows one rule:

* **numpy in, numpy out.** A host array is copied to the device once, the result copied back.
* **device in, device out.** Anything with `__cuda_array_interface__` — a CuPy array, a
  PyTorch CUDA tensor, a numba device array — is used where it lies (no copy; shape and dtype
  are read from the interface) and the result stays on the device, returned in the caller's
  own library: CuPy in → CuPy out, PyTorch in → PyTorch out, numba (or any other library) in →
  numba device array out. The result shares memory with gpulab's allocation (no copy either).
  When a function takes several arrays, the first device array among them decides
  ([`caller_of`][gpulab.arrays.caller_of]).

On numba's CUDA simulator the "device" arrays are the simulator's (`cuda.to_device` there
returns them); they follow the same rule, so the device path is tested without a GPU.

Chapters use [`device_input`][gpulab.arrays.device_input] to take an argument and
[`to_caller`][gpulab.arrays.to_caller] to give a result back; value checks (NaN, ranges ...)
run on the device (e.g. [`count_nonfinite`][gpulab.arrays.count_nonfinite]) so that a device
input never makes a silent round trip through host memory. A `stream=` argument (a numba,
CuPy or PyTorch stream) becomes a numba stream with [`numba_stream`][gpulab.arrays.numba_stream].
"""

from __future__ import annotations

import math
import sys
import threading
from dataclasses import dataclass

import numpy as np

from gpulab import device  # noqa: F401  (selects GPU or simulator before numba loads)
from gpulab.errors import DtypeError, ShapeError

from numba import cuda  # noqa: E402  (after gpulab.device)


def _is_simulator_array(x) -> bool:
    if not device.on_simulator():
        return False
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    return isinstance(x, FakeCUDAArray)


try:  # numba's own device arrays: shape and dtype are attributes (no interface dict to build per call)
    from numba.cuda.cudadrv.devicearray import DeviceNDArray as _NumbaDeviceArray, DeviceNDArrayBase as _NumbaArray
except ImportError:  # pragma: no cover - a numba-cuda that moved them: the interface is read instead
    _NumbaArray = _NumbaDeviceArray = ()


_KINDS: dict = {}  # type -> "numpy", "numba" or "cupy" (None: any other type, looked at per object)


def _kind(x):
    """What `x` is, when its type alone says: `"numpy"` (`numpy.ndarray` itself), `"numba"`
    (numba's device array) or `"cupy"`, else `None`: PyTorch tensors (on the host or the
    device), numpy subclasses (numba's mapped and managed arrays are numpy arrays with a device
    interface), the simulator's arrays, anything else. CuPy's is known by its type, without
    building its interface (CuPy builds it per access). Found once per type: a public call asks
    several times, and each test of the type costs about a microsecond."""
    t = type(x)
    k = _KINDS.get(t, 0)
    if k == 0:
        if t is np.ndarray:
            k = "numpy"
        elif issubclass(t, np.ndarray):
            k = None
        elif _NumbaArray and issubclass(t, _NumbaArray):
            k = "numba"
        elif t.__module__.startswith("cupy") and hasattr(t, "__cuda_array_interface__"):
            k = "cupy"
        else:
            k = None
        _KINDS[t] = k
    return k


def is_device_array(x) -> bool:
    """True for CuPy arrays, PyTorch CUDA tensors, numba device arrays (anything exposing
    `__cuda_array_interface__`) and the simulator's device arrays."""
    k = _kind(x)
    if k is not None:
        return k != "numpy"
    if isinstance(x, _NumbaArray) or _is_simulator_array(x):
        return True
    try:
        return hasattr(x, "__cuda_array_interface__")
    except Exception:  # e.g. a CPU torch tensor raises on the attribute
        return False


def library(x) -> str:
    """`"numpy"`, `"cupy"`, `"torch"`, `"numba"` or the top-level module of `x`'s type."""
    k = _kind(x)
    if k is not None:
        return k
    if isinstance(x, np.ndarray):
        return "numpy"
    return type(x).__module__.split(".")[0]


def shape_dtype(x) -> tuple[tuple, np.dtype]:
    """Shape and dtype of a host or device array, read without touching its data."""
    if _kind(x) is not None or isinstance(x, (np.ndarray, _NumbaArray)) or _is_simulator_array(x):
        return tuple(x.shape), np.dtype(x.dtype)
    if type(x).__module__.startswith("cupy") and hasattr(x, "dtype"):  # CuPy builds its interface per access
        return tuple(x.shape), np.dtype(x.dtype)
    if hasattr(x, "__cuda_array_interface__"):
        cai = x.__cuda_array_interface__
        return tuple(cai["shape"]), np.dtype(cai["typestr"])
    if hasattr(x, "shape") and hasattr(x, "dtype"):
        return tuple(x.shape), np.dtype(x.dtype)
    raise ShapeError(f"expected a numpy array or a device array, got {type(x).__name__}")


def _c_contiguous(cai: dict) -> bool:
    strides = cai.get("strides")
    if strides is None:
        return True
    itemsize = np.dtype(cai["typestr"]).itemsize
    expected = itemsize
    for n, s in zip(reversed(cai["shape"]), reversed(strides)):
        if n > 1 and s != expected:
            return False
        expected *= n
    return True


@dataclass
class DeviceInput:
    """An argument as a numba device array, and where it came from.

    Attributes:
        array: the data on the device (a numba device array; zero-copy for device inputs).
        on_device: True if the caller passed a device array (then results stay on the device).
        library: the caller's array library (`"numpy"`, `"cupy"`, `"torch"`, `"numba"` ...).
        source: the caller's object (kept so results can be returned in its library).
    """

    array: object
    on_device: bool
    library: str
    source: object

    @property
    def shape(self) -> tuple:
        return tuple(self.array.shape)

    @property
    def dtype(self) -> np.dtype:
        return np.dtype(self.array.dtype)


def check_array(x, name: str, *, dtypes=None, ndim: int | None = None) -> tuple[tuple, np.dtype]:
    """Shape/dtype checks with messages that name the argument; works on host and device arrays
    (read from the array interface, the data untouched). Returns `(shape, dtype)`."""
    if _kind(x) is None and not (isinstance(x, np.ndarray) or is_device_array(x)):
        raise ShapeError(f"{name} must be a {f'{ndim}-D ' if ndim else ''}numpy array or device array "
                         f"(CuPy, PyTorch, numba), got {type(x).__name__}")
    return _checked(name, *shape_dtype(x), dtypes, ndim)


def _checked(name: str, shape: tuple, dtype: np.dtype, dtypes, ndim) -> tuple[tuple, np.dtype]:
    """`check_array`'s checks of a shape and dtype already read."""
    if ndim is not None and len(shape) != ndim:
        raise ShapeError(f"{name} must be {ndim}-D, got {len(shape)}-D with shape {shape}")
    if dtypes is not None:
        allowed = [np.dtype(d) for d in dtypes]
        if dtype not in allowed:
            raise DtypeError(f"{name} has dtype {dtype}; expected {' or '.join(str(d) for d in allowed)}")
    return shape, dtype


def device_input(x, name: str = "x", *, dtypes=None, ndim: int | None = None, stream=0,
                 sync: bool = True, cai: dict | None = None) -> DeviceInput:
    """Take a public function's array argument onto the device.

    Host arrays (numpy, lists, CPU tensors) are made C-contiguous and copied once (on `stream`);
    device arrays are wrapped without a copy (they must be C-contiguous: the kernels index them
    as flat arrays). `dtypes`/`ndim` are checked first, from the array interface. `sync=False`:
    do not wait for the stream a device array names in its interface (a caller that runs on
    that very stream needs no wait; numba's default waits). A C-contiguous numba device array
    (`cuda.device_array`, `cuda.to_device`) is taken as it is, not re-wrapped, unless a wait is
    asked for and it is bound to a stream (then it is wrapped, which waits there). `cai`: the
    array's `__cuda_array_interface__` where the caller has already read it.
    """
    k = _kind(x)
    if k == "cupy" or (k != "numpy" and is_device_array(x)):
        if k != "cupy":  # (CuPy's arrays: read from the interface below)
            if _is_simulator_array(x) or isinstance(x, _NumbaArray):
                check_array(x, name, dtypes=dtypes, ndim=ndim)
            if _is_simulator_array(x):
                return DeviceInput(x, True, "numba", x)
            # numba's own array needs no wrapper; its interface names a stream (to wait for)
            # exactly where it is bound to one (`x.stream != 0`, as numba writes the interface)
            if isinstance(x, _NumbaDeviceArray) and x.is_c_contiguous() and not (sync and x.stream != 0):
                return DeviceInput(x, True, library(x), x)
        if cai is None:
            cai = x.__cuda_array_interface__  # read once: CuPy and PyTorch build it per access
        key = None if sync else _view_key(cai)
        kept = None if sync else _VIEWS.get(key)  # a kept view: this memory passed the checks below
        if kept is None or dtypes is not None or ndim is not None:
            _checked(name, tuple(cai["shape"]), np.dtype(cai["typestr"]), dtypes, ndim)
        if kept is not None:
            return DeviceInput(kept, True, k or library(x), x)
        if not _c_contiguous(cai):
            raise ShapeError(f"{name} is a non-contiguous device array (strides {cai.get('strides')}); "
                             "pass a C-contiguous array (e.g. .copy() in your library)")
        return DeviceInput(_view(key, cai) if not sync else cuda.as_cuda_array(x, sync=True), True, k or library(x), x)
    if not isinstance(x, np.ndarray):
        if type(x).__module__.split(".")[0] == "torch":  # a CPU tensor
            x = x.numpy()
        elif isinstance(x, (list, tuple)) or np.isscalar(x):
            x = np.asarray(x)
        else:
            raise ShapeError(f"{name} must be a numpy array or a device array, got {type(x).__name__}")
    check_array(x, name, dtypes=dtypes, ndim=ndim)
    return DeviceInput(cuda.to_device(np.ascontiguousarray(x), stream=stream), False, "numpy", x)


def device_input_on(x, name: str = "x", *, stream=0, dtypes=None, ndim: int | None = None) -> DeviceInput:
    """[`device_input`][gpulab.arrays.device_input] for a device array that work queued on
    `stream` will read: numba's own taken as it is (never waited for, as numba's own launches
    do not wait), another library's waited for only where its interface names a stream other
    than `stream` (numba's default stream `0` is the legacy one, `1` in the interface), else
    read through a kept view (no wait, no new wrapper: tens of microseconds less a call). A host
    array is `device_input`'s (copied on `stream`)."""
    k = _kind(x)
    if k == "numpy" or (k is None and not is_device_array(x)):
        return device_input(x, name, stream=stream, dtypes=dtypes, ndim=ndim)
    if k != "cupy" and hasattr(x, "is_c_contiguous"):  # numba's (or the simulator's): taken as it is
        return device_input(x, name, stream=stream, sync=False, dtypes=dtypes, ndim=ndim)
    cai = x.__cuda_array_interface__  # read once: CuPy and PyTorch build it per access
    return device_input(x, name, stream=stream, sync=_waits(cai, stream), cai=cai, dtypes=dtypes, ndim=ndim)


def _waits(cai: dict, stream) -> bool:
    """Whether work on `stream` (a numba stream, or `0`) must wait for an array whose interface
    is `cai`: where the interface names a stream, and not that one (numba's default stream, `0`
    or its object, is the legacy one, `1` in an interface)."""
    theirs = cai.get("stream")
    return theirs is not None and theirs != ((int(stream) if stream is not None else 0) or 1)


def kept_view(x, stream=0):
    """For a CuPy array `x` whose numba view is already kept: that view, the one
    [`device_input_on`][gpulab.arrays.device_input_on] would return for it on `stream`, found
    with one read of its interface and one look-up. `None` for anything else (another kind of
    array, memory seen for the first time, an interface that names a stream work on `stream`
    must wait for): take it the full way then.

    A kept view is of memory that passed `device_input`'s checks, under a key with its
    pointer, shape, dtype and strides, so the view's `shape` and `dtype` are the array's and it
    is C-contiguous; the caller checks only what it needs beyond that (its dimensions, dtypes,
    limits). It is a public call's short way in (chapter 4, "A CuPy array seen before")."""
    if _kind(x) != "cupy":
        return None
    cai = x.__cuda_array_interface__
    if _waits(cai, stream):
        return None  # device_input_on waits for their stream: not a kept view's way
    return _VIEWS.get(_view_key(cai))


_VIEWS: dict = {}  # (pointer, shape, typestr, strides) -> a numba view of that memory, oldest first
# the same for results made from the caller's pool (`device_result`): kept apart, so that a
# caller who keeps many results alive (each call a new block, a new view) does not push the
# views of its inputs out
_RESULT_VIEWS: dict = {}
_VIEWS_MAX = 8
_VIEWS_LOCK = threading.Lock()  # taken to add and drop views; a look-up is one atomic dict read


def _view_key(cai: dict) -> tuple:
    """What a view is kept by: the pointer, shape, dtype and strides its interface `cai` gives."""
    return cai["data"][0], tuple(cai["shape"]), cai["typestr"], cai.get("strides")


def _view(key: tuple, cai: dict, kept: dict = _VIEWS):
    """A new numba device array over another library's C-contiguous array (its interface
    `cai`), not waited for, kept by `key` (`_view_key(cai)`) for the calls that follow. numba's
    `as_cuda_array` costs about 20 us a call (an H100 host), a tenth of a sort of 2^24 keys; the
    views of the last few arrays are kept instead, keyed by what they describe, in `kept`:
    `_VIEWS` for inputs, of memory that passed `device_input`'s checks only, so a kept one needs
    no check again; `_RESULT_VIEWS` for new results from the caller's pool (`device_result`).
    A view does not own its memory (nor keep the caller's array alive): it is only used while
    the caller's array is, during a call, and under unified addressing a pointer names one
    allocation of one device. The first views made are the first dropped (a look-up does not
    refresh a view: that would take the lock on every call)."""
    v = _unbound_view(cai, owner=None)
    with _VIEWS_LOCK:
        kept[key] = v
        while len(kept) > _VIEWS_MAX:
            del kept[next(iter(kept))]
    return v


def _unbound_view(cai: dict, owner):
    """numba's array over the memory `cai` describes, bound to no stream and not waited for."""
    return cuda.from_cuda_array_interface({**cai, "stream": None}, owner=owner, sync=False)


def clear_views() -> None:
    """Forget the numba views kept of other libraries' arrays (e.g. before the device is reset)."""
    with _VIEWS_LOCK:
        _VIEWS.clear()
        _RESULT_VIEWS.clear()


def span(a) -> tuple[int, int]:
    """Where a numba device array's memory starts and ends (the simulator's: its numpy array's;
    another library's device array: its interface's address)."""
    if device.on_simulator():
        start = a._ary.__array_interface__["data"][0]
    elif hasattr(a, "device_ctypes_pointer"):
        start = a.device_ctypes_pointer.value
    else:
        start = a.__cuda_array_interface__["data"][0]
    return start, start + a.nbytes


def describe(*arrays) -> DeviceInput:
    """Who gets the results, without moving any data: the first device array among `arrays`
    (as a [`DeviceInput`][gpulab.arrays.DeviceInput] whose `array` is `None`), else numpy."""
    for x in arrays:
        if x is None:
            continue
        k = _kind(x)  # CuPy's and numba's own: known by their type (a call asks once or more)
        if k == "cupy" or k == "numba":
            return DeviceInput(None, True, k, x)
        if k is None and is_device_array(x):
            return DeviceInput(None, True, "numba" if _is_simulator_array(x) else library(x), x)
    return DeviceInput(None, False, "numpy", None)


def caller_of(*inputs: DeviceInput) -> DeviceInput:
    """The input whose kind the results take: the first device input, else the first (host) one."""
    return next((i for i in inputs if i.on_device), inputs[0])


def to_caller(d_array, like: DeviceInput | bool, stream=0):
    """Return a device result the way the caller's input came in.

    `like` is the [`DeviceInput`][gpulab.arrays.DeviceInput] of the call's main argument (or a
    bool: on device or not). Host callers get numpy (copied on `stream`, complete when this
    returns); device callers get their own library's array type, sharing memory with `d_array`.
    """
    on_device = like.on_device if isinstance(like, DeviceInput) else bool(like)
    lib = like.library if isinstance(like, DeviceInput) else "numba"
    if not on_device:
        if not hasattr(d_array, "copy_to_host"):
            return np.asarray(d_array)
        out = d_array.copy_to_host(stream=stream)
        if stream:
            stream.synchronize()
        return out
    made = getattr(d_array, "__dict__", {}).get("_gpulab_result")  # device_empty's: the caller's kind already
    if made is not None and library(made) == lib:
        return made
    if lib == "cupy":
        import cupy

        return cupy.asarray(d_array)
    if lib == "torch":
        import torch

        return torch.as_tensor(d_array, device=like.source.device)
    return d_array


def device_empty(n: int | tuple, dtype, like: DeviceInput, stream=0):
    """A new C-contiguous device array of shape `n` (an int: 1-d) for a result that goes back to
    the caller (as a numba array, for the kernels). Where the caller's input is a CuPy array or a PyTorch tensor
    and the work runs on the default stream, the memory comes from that library's allocator:
    its pool makes a repeated call's result nearly free, where numba's `cuda.device_array` asks
    the driver every time (a radix sort of 2^24 keys on an H100 in CUDA C: 1.055x its kernels'
    time with CuPy's pool, 1.35x with numba's allocation; docs/benchmarks/radix-call-timeline-h100.json).
    The array is wrapped without a synchronization and without a stream (it is new memory), and
    `to_caller` returns the library's array itself. On another stream, or for other callers, numba allocates
    (a pool's block may be reused in the order of the stream it was freed on, which gpulab's
    stream need not follow)."""
    from numba import cuda

    x = _caller_empty(n, dtype, like, stream)
    return cuda.device_array(n, dtype, stream=stream) if x is None else _result_view(x)


def device_result(n: int | tuple, dtype, like: DeviceInput, stream=0):
    """`(array, result)`: a new result as [`device_empty`][gpulab.arrays.device_empty] makes it,
    for a call whose kernels need it before their first launch. `result` is what the caller
    gets, the caller's library's array that owns the memory (CuPy, PyTorch), or `None` where
    numba allocated `array` (then `to_caller(array, ...)` gives the result). `array` is the
    numba array the kernels write: for a library's result a kept view of its memory (like an
    input's, `_view`), so a call that gets the same block from the pool as the call before
    makes no new view (about 20 us on an H100 host: `_view`). The view does not own the
    memory: it is used only while `result` is alive, during the call."""
    from numba import cuda

    x = _caller_empty(n, dtype, like, stream)
    if x is None:
        return cuda.device_array(n, dtype, stream=stream), None
    cai = x.__cuda_array_interface__
    key = _view_key(cai)
    v = _RESULT_VIEWS.get(key)
    return (v if v is not None else _view(key, cai, _RESULT_VIEWS)), x


def _caller_empty(n, dtype, like: DeviceInput, stream):
    """A new array from the caller's library's allocator (CuPy, PyTorch: its pool), on the
    input's GPU, where the work runs on the default stream; else None (numba allocates)."""
    lib = like.library if like.on_device else None
    try:
        if not stream and lib == "cupy":
            import cupy

            if cupy.cuda.get_current_stream().ptr == 0:
                with cupy.cuda.Device(like.source.device.id):  # the input's GPU, as for torch
                    return cupy.empty(n, dtype)
        if not stream and lib == "torch":
            import torch

            dev = like.source.device
            if torch.cuda.current_stream(dev).cuda_stream == 0:
                return torch.empty(n, dtype=_torch_dtype(torch, dtype), device=dev)
    except (AttributeError, KeyError, TypeError, ValueError):  # a library too old for the dtype: numba's
        pass
    return None


def _result_view(x):
    """A numba array over `x`, a new CuPy array or PyTorch tensor that holds a result: it owns
    `x`, binds no stream (`x` is new memory: nothing to wait for, and a stream in its interface
    would make the caller's library wait for the whole device when it takes the result back)
    and keeps `x`, which `to_caller` returns as it is."""
    v = _unbound_view(x.__cuda_array_interface__, owner=x)
    v.__dict__["_gpulab_result"] = x
    return v


def _torch_dtype(torch, dtype):
    """The torch dtype of a numpy dtype (uint32: torch >= 2.3)."""
    return {np.dtype(np.uint32): torch.uint32, np.dtype(np.int32): torch.int32, np.dtype(np.int64): torch.int64,
            np.dtype(np.float32): torch.float32, np.dtype(np.float64): torch.float64}[np.dtype(dtype)]


def numba_stream(stream=None):
    """The numba stream to launch on for a public function's `stream=` argument.

    `None` or `0`: the default stream. A numba stream is used as it is; a CuPy stream (`.ptr`),
    a PyTorch stream (`.cuda_stream`) or a raw `CUstream` handle (an int) is wrapped with
    `numba.cuda.external_stream`, so gpulab's kernels queue behind the caller's work. The
    simulator runs everything in order, so there every stream is the default one.
    """
    if stream is None or (isinstance(stream, (int, np.integer)) and int(stream) == 0):
        return 0
    if device.on_simulator():
        return 0
    from numba.cuda.cudadrv.driver import Stream

    if isinstance(stream, Stream):
        return stream
    handle = getattr(stream, "ptr", None)  # CuPy
    if handle is None:
        handle = getattr(stream, "cuda_stream", None)  # PyTorch
    if handle is None and isinstance(stream, (int, np.integer)):
        handle = int(stream)
    if handle is None:
        raise DtypeError(f"stream must be a numba, CuPy or PyTorch stream or a CUstream handle, got {type(stream).__name__}")
    return 0 if int(handle) == 0 else cuda.external_stream(int(handle))


def to_host(x) -> np.ndarray:
    """A numpy copy of a host or device array (for references, tests and small results)."""
    if isinstance(x, np.ndarray):
        return x
    if hasattr(x, "copy_to_host"):
        return x.copy_to_host()
    if is_device_array(x):
        return cuda.as_cuda_array(x).copy_to_host()
    if type(x).__module__.split(".")[0] == "torch":
        return x.detach().cpu().numpy()
    return np.asarray(x)


# ----------------------------------------------------------------------------- device-side checks

_NONFINITE_BLOCK = 256


@cuda.jit
def count_nonfinite_kernel(x, out):
    # grid-stride loop; one atomic per thread that saw a NaN/inf (rare: inputs are expected to be
    # finite, so the common case costs one read of x)
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    bad = 0
    while i < x.size:
        v = x[i]
        if not math.isfinite(v):
            bad += 1
        i += stride
    if bad:
        cuda.atomic.add(out, 0, bad)


def count_nonfinite(d_array, stream=0) -> int:
    """Number of NaN / inf values in a float device array, counted on the device (one int back)."""
    from gpulab.launch import ceil_div

    flat = d_array.reshape(d_array.size) if len(d_array.shape) != 1 else d_array
    if flat.size == 0:
        return 0
    out = cuda.to_device(np.zeros(1, np.int64), stream=stream)
    blocks = min(ceil_div(flat.size, _NONFINITE_BLOCK), 1024 if not device.on_simulator() else 2)
    count_nonfinite_kernel[blocks, _NONFINITE_BLOCK if not device.on_simulator() else 32, stream](flat, out)
    return int(to_caller(out, False, stream)[0])


def ptx_targets():
    """The kernels here, for the sm_90 compile check."""
    from numba import float32, float64, int64

    k = count_nonfinite_kernel
    return [("count_nonfinite_f32", k, (float32[::1], int64[::1])),
            ("count_nonfinite_f64", k, (float64[::1], int64[::1]))]


def cupy_on_current_device(*arrays):
    """The `cupy` module where every array (`None`s skipped) is a C-contiguous CuPy ndarray on
    CuPy's current device and CuPy's null stream is current, else `None`: the conditions the
    chapters' calls by addresses share (chapter 1's `_by_pointers`, chapter 4's
    `_by_addresses`), read from CuPy's own attributes, no array interface. Each chapter checks
    its dtypes and shapes, and that a CUDA context is current
    (`gpulab.launch.current_context`), itself.

    CuPy's functions are looked up once per `cupy` module (`_cupy_parts`), and C-contiguity
    is read from the array's own `_c_contiguous` where CuPy has it
    ([`own_contiguity_flag`][gpulab.launch.own_contiguity_flag]: `flags` makes an object per call)."""
    cupy = sys.modules.get("cupy")
    parts = _CUPY[0]
    if parts is None or parts[0] is not cupy:
        parts = _cupy_parts(cupy)
        if parts is None:
            return None
    _, t, get_device, get_stream, own_flag = parts
    dev = None
    for a in arrays:
        if a is None:
            continue
        if type(a) is not t:  # (before asking CuPy anything: CuPy may be imported where no GPU works)
            return None
        if not (a._c_contiguous if own_flag else a.flags.c_contiguous):
            return None
        if dev is None:
            dev = get_device()  # (asked once for all the arrays)
        if a.data.device_id != dev:
            return None
    return None if dev is None or get_stream().ptr else cupy


# (the cupy module, its ndarray, getDevice, get_current_stream, whether arrays have `_c_contiguous`)
_CUPY: list = [None]


def _cupy_parts(cupy):
    """What `cupy_on_current_device` reads of the `cupy` module, kept in `_CUPY` for that
    module; None (nothing kept) where it has no ndarray or no `cuda` functions (a stub, an
    import half done). Looking a function up asks the GPU nothing."""
    from gpulab.launch import own_contiguity_flag

    try:
        t = cupy.ndarray
        parts = (cupy, t, cupy.cuda.runtime.getDevice, cupy.cuda.get_current_stream, own_contiguity_flag(t))
    except AttributeError:
        return None
    _CUPY[0] = parts
    return parts
