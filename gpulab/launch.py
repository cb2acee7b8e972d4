"""Launching kernels, the same way in every chapter: grid and block arithmetic, one kernel
provider for both backends ([`KernelSource`][gpulab.launch.KernelSource] →
[`KernelProvider`][gpulab.launch.KernelProvider]), and the [`PlanCache`][gpulab.launch.PlanCache]
of the plans the public functions keep."""

from __future__ import annotations

import struct
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from gpulab import cudac, device


def ceil_div(a: int, b: int) -> int:
    """Smallest integer >= a / b for positive b: the number of blocks that cover ``a`` items."""
    return -(-a // b)


def grid_1d(n: int, block: int) -> tuple[int]:
    """One-dimensional grid of ``block``-thread blocks covering ``n`` items (at least one block)."""
    return (max(1, ceil_div(n, block)),)


def grid_2d(rows: int, cols: int, block: tuple[int, int]) -> tuple[int, int]:
    """Grid ``(x, y)`` for a 2-D launch where x runs over ``cols`` and y over ``rows``.

    ``block`` is ``(block_x, block_y)`` in CUDA order: x is the fastest-varying thread index.
    """
    bx, by = block
    return (max(1, ceil_div(cols, bx)), max(1, ceil_div(rows, by)))


# --8<-- [start:check_block]
def check_block(threads: int, limit: int = 1024) -> None:
    """Raise a clear error for a block that asks for more threads than the hardware allows."""
    from gpulab.errors import LimitError

    if threads > limit:
        raise LimitError(f"a block of {threads} threads exceeds the limit of {limit} threads per block")
# --8<-- [end:check_block]


_I32: dict = {}  # int -> np.int32: made once (numpy's constructor takes about a microsecond a call)


def i32(x) -> np.int32:
    """An `int32` kernel argument (sizes, offsets, flags: the kernels index with int32); the
    same immutable `np.int32` for the same value, kept for the first 4,096 values asked for."""
    try:
        v = _I32.get(x)
    except TypeError:  # (unhashable: an array, which numpy converts or refuses)
        return np.int32(x)
    if v is None:
        v = np.int32(x)
        if len(_I32) < 4096 and type(x) is int:
            _I32[x] = v
    return v


def u32(x) -> np.uint32:
    """A `uint32` kernel argument from any whole number: its low 32 bits (hash keys, masks)."""
    return np.uint32(int(x) & 0xFFFFFFFF)


# ----------------------------------------------------------------------------- numba launches


# kernel -> {argument types: a _Plan, or None: numba's launch (an argument the fast path does
# not flatten)}; weak in the kernel: the plans add no reference of gpulab's to a
# kernel its owner drops (numba-cuda 0.30.4 itself keeps a launched kernel alive, measured on
# an H100 host)
_FAST_PLANS = weakref.WeakKeyDictionary()
_CONFIGS: dict = {}
_INT64 = (-(2 ** 63), 2 ** 63)


def _type_key(a):
    """What numba's type for ``a`` depends on, cheaply: a device array's numba type (for a numba
    device array its name, kept on the array: hashing a numba type builds its key again at
    every lookup), a Python int's class while it fits int64 (numba types larger ones as
    uint64), else the class."""
    d = getattr(a, "__dict__", None)
    if d is not None:
        k = d.get("_gpulab_type_key")
        if k is not None:
            return k
    t = getattr(a, "_numba_type_", None)
    if t is not None:
        if d is not None and type(a).__module__.startswith("numba."):
            d["_gpulab_type_key"] = k = ("numba array", str(t))
            return k
        return t
    if type(a) is int and not _INT64[0] <= a < _INT64[1]:
        return ("int beyond int64", a >= 0)
    return type(a)


def launch_numba(kernel, grid, block, *args, stream=0, shared_bytes: int = 0) -> None:
    """``kernel[grid, block, stream, shared_bytes](*args)`` for a numba ``@cuda.jit`` kernel,
    with less host work per call on a GPU. At every call numba wraps each array argument in a
    memory view, checks it and builds the launch configuration again: 145.5 µs for a launch of
    26 arguments (15 arrays) against 29.4 µs for 2 arrays, on an H100 host
    (`docs/benchmarks/ab-runs/launch-numba-ab-h100.json`), where a GP generation launches
    a dozen kernels of up to 22 arguments, and an Euler circuit about a hundred.

    Here the first call with given argument types is numba's own launch (which compiles).
    Later calls flatten the arguments as numba's `_Kernel._prepare_args` does (an array:
    meminfo, parent, size, itemsize, pointer, shape, strides in bytes; a scalar: its C type)
    straight from the device arrays, pack them with one `struct` format kept per argument
    types (the layout checked once against the driver's offsets of the kernel's parameters,
    where the driver gives them), and hand the buffer to the driver's `cuLaunchKernel` as
    pycuda's prepared call does, with numba's context made current once per thread. Where
    the driver's entry point cannot be had, the layout does not match, or the default stream
    is the per-thread one (`NUMBA_CUDA_PER_THREAD_DEFAULT_STREAM` or
    `CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM` set), the flattened arguments go through the
    `cuda.core.launch` that numba calls (59.9 µs for the 26 arguments on that H100 host, most
    of it in `cuda.core`'s own argument handling).

    Any argument it does not flatten (a host array, which numba copies; an array of layout
    'A'; a record, a tuple), a stream other than 0 or numba's, an overload numba would reach by converting a type,
    numba's simulator, a kernel compiled with ``debug`` or sensitive to its launch
    configuration: numba's launch, always. Unlike numba's launch it does not run a launch
    configuration's ``pre_launch_callbacks`` (gpulab registers none) nor warn of a grid under
    128 blocks. Grid and block are whole numbers or sequences of them, as numba takes them."""
    if device.on_simulator():
        kernel[grid, block, stream, shared_bytes](*args)
        return
    if isinstance(grid, list):
        grid = tuple(grid)
    if isinstance(block, list):
        block = tuple(block)
    try:
        plans = _FAST_PLANS.get(kernel)
        if plans is None:
            plans = _FAST_PLANS[kernel] = {}
    except TypeError:  # (a kernel that cannot be referenced weakly: numba's launch)
        kernel[grid, block, stream, shared_bytes](*args)
        return
    key = tuple(map(_type_key, args))
    plan = plans.get(key, False)
    if not plan:  # numba's launch: the first call with these types (it compiles), or no plan
        kernel[grid, block, stream, shared_bytes](*args)
        if plan is False:
            plans[key] = _fast_plan(kernel, args)
        return
    flat: list = []
    for convert, a in zip(plan.converters, args):
        convert(a, flat)
    cfg, dims = _config(grid, block, shared_bytes)
    if plan.packer is not None:
        handle = _stream_handle(stream)
        if handle is not None:
            buf = plan.packer.pack(*flat)  # (plans are per type: every value fits its C type)
            device.numba_context_current()  # (a context-free kernel on stream 0 runs in the current one)
            _raw_launch(plan.function, dims, handle, buf, plan.size)
            return
    from cuda.core import launch
    from numba.cuda.cudadrv import driver

    launch(driver._to_core_stream(stream), cfg, plan.overload._codelibrary.get_cufunc().kernel,
           *(c(v) if c is not None else v for c, v in zip(plan.ctypes, flat)))


def numba_pointer_launch(kernel, grid, block, args, pointers: int):
    """`go(p_1, ..., p_pointers)`: `launch_numba(kernel, grid, block, *args)` on the legacy
    default stream with the data addresses of the first `pointers` arguments (device arrays)
    replaced by the given ones, for arrays of the same shapes and types as those in `args`,
    which serve as a template only (nothing is launched here; the kernel is compiled for their
    types if it was not). Every flattened value but the addresses is packed once, so a call is
    one `struct` pack and one `cuLaunchKernel`. `None` where `launch_numba` would not take the
    driver's way (see it: the simulator, a per-thread default stream, an argument it does not
    flatten, a layout that does not match). `go` keeps the arguments after the first `pointers`
    alive (a workspace among them is passed by address)."""
    if device.on_simulator() or _driver()[0] is None:
        return None
    try:
        kernel.compile(tuple(kernel.typeof_pyval(a) for a in args))
    except Exception:  # noqa: BLE001 (what numba cannot type here, its own launch says)
        return None
    plan = _fast_plan(kernel, args)
    if plan is None or plan.packer is None:
        return None
    flat: list = []
    slots = []  # where each of the first `pointers` arrays' address sits among the flattened values
    for i, (convert, a) in enumerate(zip(plan.converters, args)):
        if i < pointers:
            if convert is not _flat_array:
                return None
            slots.append(len(flat) + 4)  # meminfo, parent, size, itemsize, then the address
            flat += (0, 0, a.size, a.dtype.itemsize, 0, *a.shape, *a.strides)  # (the template's address unread)
        else:
            convert(a, flat)
    _, dims = _config(tuple(grid) if isinstance(grid, list) else grid, tuple(block) if isinstance(block, list) else block, 0)
    device.numba_context_current()
    pack, run = plan.packer.pack, _kept_raw_launch(plan.function, dims, plan.size)

    def go(*addresses):
        values = flat.copy()  # (a call's own list: two threads may share a launch)
        for slot, p in zip(slots, addresses):
            values[slot] = p
        run(pack(*values))

    go.keep = args[pointers:]  # (the arrays behind the fixed addresses live as long as the launch)
    return go


def vector_address(a) -> int | None:
    """The device address of `a` when it is a 1-D C-contiguous device array of 4-byte items
    that a kept launch ([`KernelProvider.kept`][gpulab.launch.KernelProvider.kept]) may take in
    place of its template: a numba device array (the address is kept on the array after the
    first read: none of it changes in the array's life) or a CuPy array (read each time: its
    type is known after the first, so nothing else is looked up on it, and its contiguity is
    read from CuPy's `_c_contiguous` where the type has it, as in
    `gpulab.arrays.cupy_on_current_device`); `None` for anything else (the caller then
    launches the usual way, which takes it)."""
    own = _CUPY_TYPES.get(type(a))
    if own is not None:  # (own: the type's `_c_contiguous` is an attribute, `own_contiguity_flag`)
        ok = a._c_contiguous if own else a.flags.c_contiguous
        return a.data.ptr if ok and a.ndim == 1 and a.itemsize == 4 else None
    p = getattr(a, "_gpulab_vector", False)
    if p is not False:
        return p
    t = type(a)
    if t.__module__.startswith("cupy"):
        _CUPY_TYPES[t] = own_contiguity_flag(t)
        return vector_address(a)
    if t.__module__.startswith("numba.") and hasattr(a, "device_ctypes_pointer") and hasattr(a, "__dict__"):
        p = a._gpulab_vector = ((a.device_ctypes_pointer.value or 0)
                                if a.ndim == 1 and a.dtype.itemsize == 4 and a.is_c_contiguous() else None)
        return p
    return None


_CUPY_TYPES: dict = {}  # CuPy's array types met by `vector_address`: whether they have `_c_contiguous`


def own_contiguity_flag(t) -> bool:
    """Whether arrays of type `t` (CuPy's) give their C-contiguity as an attribute
    `_c_contiguous` (CuPy's own field, a data descriptor of the type; a method of that name,
    always true as an object, does not count): read it, else `flags.c_contiguous`, which makes
    an object at each call (0.75-0.97 against 0.29-0.33 us after a synchronised sort, H200)."""
    import inspect

    return inspect.isdatadescriptor(inspect.getattr_static(t, "_c_contiguous", None))


class _Plan:
    """What `launch_numba` keeps per kernel and argument types: the compiled overload, one
    converter per argument (appends its flattened values), the `struct` packer of the flattened
    values with the kernel handle and the buffer's size for `cuLaunchKernel` (packer None: no
    driver entry point, or the driver's offsets differ from the packer's, so `cuda.core.launch`
    takes them), and per flattened value the ctypes type `cuda.core.launch` needs (None: pass
    as is)."""

    __slots__ = ("overload", "converters", "packer", "function", "size", "ctypes")

    def __init__(self, overload, converters, fmt: str, ctypes_):
        self.overload, self.converters, self.ctypes = overload, converters, ctypes_
        self.packer, self.function, self.size = _raw_layout(overload, fmt)


# numba's scalar type -> (its `struct` code, the ctypes type `cuda.core.launch` takes, None: as is)
_SCALARS = {"int8": ("b", "c_int8"), "uint8": ("B", "c_uint8"), "int16": ("h", "c_int16"), "uint16": ("H", "c_uint16"),
            "int32": ("i", "c_int32"), "uint32": ("I", "c_uint32"), "int64": ("q", "c_int64"),
            "uint64": ("Q", "c_uint64"), "float32": ("f", "c_float"), "float64": ("d", "c_double"),
            "bool": ("?", None)}


def _fast_plan(kernel, args):
    """The plan for ``args``' types (see `_Plan`), or None where an argument is not a device
    array or a plain scalar, or the kernel checks errors on the device (``debug``)."""
    import ctypes

    from numba import types
    from numba.cuda.cudadrv.devicearray import DeviceNDArray

    try:
        sig = tuple(kernel.typeof_pyval(a) for a in args)
        overload = kernel.overloads[sig]
    except Exception:  # noqa: BLE001 (an unknown case: numba's launch handles it)
        return None
    if (getattr(overload, "debug", False) or getattr(overload, "cooperative", False)
            or getattr(overload, "extensions", None) or getattr(overload, "launch_config_sensitive", False)
            or getattr(kernel, "_launch_config_sensitive", False) or getattr(kernel, "specialized", False)):
        return None  # (what numba's launch does more than flatten the arguments)
    converters, fmt, ctypes_ = [], [], []
    for ty, a in zip(overload.argument_types, args):
        if isinstance(ty, types.Array) and isinstance(a, DeviceNDArray) and ty.layout in "CF":
            converters.append(_flat_array)
            n = 5 + 2 * ty.ndim  # meminfo, parent, size, itemsize, pointer, shape, strides
            fmt.append("QQqqQ" + "q" * (2 * ty.ndim))
            ctypes_ += [None] * n
        elif str(ty) in _SCALARS and (ty == types.boolean or not isinstance(a, bool)):
            code, ctype = _SCALARS[str(ty)]
            converters.append(_flat_plain)
            fmt.append(code)
            ctypes_.append(ctype and getattr(ctypes, ctype))
        else:
            return None
    return _Plan(overload, tuple(converters), "".join(fmt), tuple(ctypes_))


def _flat_array(a, flat: list) -> None:
    """A device array as numba's kernels take it: meminfo, parent (both 0), size, itemsize,
    data pointer, shape, strides in bytes; kept on the array after the first launch (none of
    them changes in a numba device array's life)."""
    d = a.__dict__
    t = d.get("_gpulab_flat")
    if t is None:
        t = d["_gpulab_flat"] = (0, 0, a.size, a.dtype.itemsize, a.device_ctypes_pointer.value or 0, *a.shape,
                                 *a.strides)
    flat += t


def _flat_plain(a, flat: list) -> None:
    flat.append(a)


def _config(grid, block, shared_bytes: int):
    """cuda.core's launch configuration, one per (grid, block, shared bytes), built as numba
    builds it (which checks grid and block), with the six dimensions `cuLaunchKernel` takes."""
    key = (grid, block, shared_bytes)
    cfg = _CONFIGS.get(key)
    if cfg is None:
        from cuda.core import LaunchConfig
        from numba.cuda import dispatcher

        if len(_CONFIGS) > 4096:
            _CONFIGS.clear()
        coop = "is_cooperative" if dispatcher.CUDA_CORE_GE_1_0 else "cooperative_launch"
        lc = LaunchConfig(grid=grid, block=block, shmem_size=shared_bytes, **{coop: False})
        g = tuple(grid) if isinstance(grid, tuple) else (grid,)
        b = tuple(block) if isinstance(block, tuple) else (block,)
        dims = (*g, *(1,) * (3 - len(g)), *b, *(1,) * (3 - len(b)), shared_bytes)
        cfg = _CONFIGS[key] = (lc, tuple(int(d) for d in dims))
    return cfg


# ---- the driver's cuLaunchKernel, with the arguments in one buffer (as pycuda's prepared call)

_DRIVER: list = []  # [cuLaunchKernel through ctypes, the `extra` array type] once looked up, [None] if not to be had
_THREAD = threading.local()  # .ctx_get: this thread's driver function and result holder for `current_context`


def _driver():
    """[`cuLaunchKernel` through ctypes, the `extra` array type, ctypes.byref], or [None] where
    [`device.raw_driver`][gpulab.device.raw_driver] cannot be had (the simulator, no driver,
    a per-thread default stream)."""
    if not _DRIVER:
        import ctypes

        drv = device.raw_driver()
        if drv is None:
            _DRIVER[:] = [None]
            return _DRIVER

        class Extra(ctypes.Structure):  # CU_LAUNCH_PARAM_BUFFER_POINTER, buf, ..._SIZE, &size, ..._END
            _fields_ = [("k1", ctypes.c_void_p), ("buf", ctypes.c_char_p), ("k2", ctypes.c_void_p),
                        ("size", ctypes.c_void_p), ("end", ctypes.c_void_p)]

        _DRIVER[:] = [drv.launch, Extra, ctypes.byref]
    return _DRIVER


_CTX_GET: list = []  # [the driver's cuCtxGetCurrent through ctypes], or [None] where it cannot be had


def current_context() -> int:
    """The handle of the CUDA context current in this host thread (0 if none, and always 0 on
    the simulator): a key for what is made in one context (kernels, buffers). One ctypes call
    to the driver's `cuCtxGetCurrent`, where numba's `cuda.get_current_device()` asks the
    driver several times and takes a lock outside numba's own calls (the kept-launch look-up of
    gpulab.matmul took 9.4 us with it on an H200 host, 1.6 us with this; 1.0 us a call with
    declared argument types, which this call no longer has). Each thread keeps the function
    and its own result holder in one attribute, read in one look-up. Where `libcuda.so.1`
    cannot be loaded, numba's current context gives the handle (slower, the same key)."""
    try:
        fn, holder, ref = _THREAD.ctx_get
    except AttributeError:
        fn, holder, ref = _THREAD.ctx_get = _context_getter()
    if fn is None:
        from gpulab import device

        if device.on_simulator():
            return 0
        from numba import cuda

        handle = cuda.current_context().handle
        return int(getattr(handle, "value", None) or int(handle))
    return (holder.value or 0) if fn(ref) == 0 else 0


def _context_getter() -> tuple:
    """(`cuCtxGetCurrent` through ctypes, a result holder, its address) for one thread, or
    (None, None, None) where `libcuda.so.1` cannot be loaded."""
    import ctypes

    if not _CTX_GET:
        try:
            fn = ctypes.CDLL("libcuda.so.1").cuCtxGetCurrent
            fn.restype = ctypes.c_int  # (no argtypes: the holder's `byref` goes as it is, nothing converted)
            _CTX_GET[:] = [fn]
        except (OSError, AttributeError):
            _CTX_GET[:] = [None]
    if _CTX_GET[0] is None:
        return None, None, None
    holder = ctypes.c_void_p()
    return _CTX_GET[0], holder, ctypes.byref(holder)


def _raw_layout(overload, fmt: str):
    """(packer, kernel handle, (size holder, its address)) for `cuLaunchKernel`, or (None, None, None) where
    the driver's entry point cannot be had or the kernel's parameters do not sit where the
    `struct` format puts them (checked against the driver's offsets where it gives them)."""
    import ctypes

    if _driver()[0] is None:
        return None, None, None
    packer = struct.Struct("@" + fmt)
    kernel = overload._codelibrary.get_cufunc().kernel
    try:
        info = [(int(i.offset), int(i.size)) for i in kernel.arguments_info]
    except Exception:  # noqa: BLE001 (a driver that does not say: trust the C alignment)
        info = None
    if info is not None:
        offsets, off = [], 0
        for code in fmt:
            size = struct.calcsize(code)
            off = -(-off // size) * size
            offsets.append((off, size))
            off += size
        if offsets != info:
            return None, None, None
    size = ctypes.c_size_t(packer.size)
    return packer, int(kernel.handle), (size, ctypes.addressof(size))


def _stream_handle(stream):
    """The CUstream of 0 or a numba stream (its own handle: 0 the legacy default stream, which
    stream 0 is wherever this path is taken, or the legacy / per-thread one), None for anything
    else (`cuda.core.launch` takes it)."""
    if not stream:
        return 0
    from numba.cuda.cudadrv.driver import Stream

    if type(stream) is Stream:
        return int(stream.handle or 0)
    return None


def _raw_launch(function: int, dims: tuple, stream: int, buf: bytes, size: tuple) -> None:
    """`cuLaunchKernel` of the kernel handle `function` (grid, block, shared bytes in `dims`)
    on `stream` with the packed arguments `buf` (`size`: the buffer's size holder and its
    address); a driver error is numba's `CudaAPIError`, as numba's launch raises."""
    fn, Extra, byref = _DRIVER
    gx, gy, gz, bx, by, bz, shared = dims
    err = fn(function, gx, gy, gz, bx, by, bz, shared, stream, None, byref(Extra(1, buf, 2, size[1], None)))
    if err:
        _raise(err)


def _kept_raw_launch(function: int, dims: tuple, size: tuple):
    """`run(buf)`: `_raw_launch(function, dims, 0, buf, size)` with every argument but the
    packed buffer made a ctypes value once, through the driver's entry point without declared
    argument types (so ctypes converts nothing at a call): about half the host time of a
    typed call in a micro-benchmark (0.96 against 1.84 us on the 2-core dev machine)."""
    import ctypes

    fn, Extra, byref = _DRIVER
    raw = device.raw_driver().lib["cuLaunchKernel"]  # (a new function pointer: no argtypes of its own)
    raw.restype = ctypes.c_int
    head = (ctypes.c_void_p(function), *(ctypes.c_uint(d) for d in dims), ctypes.c_void_p(0), None)
    size_at = size[1]

    def run(buf: bytes) -> None:
        device.numba_context_current()  # (a launch kept in one thread may be called in another)
        err = raw(*head, byref(Extra(1, buf, 2, size_at, None)))
        if err:
            _raise(err)

    run.size = size  # (the size holder lives as long as the launch)
    return run


def _raise(err: int):
    device.raise_driver_error(err, "cuLaunchKernel")


# ----------------------------------------------------------------------------- kernel providers


@dataclass(frozen=True)
class KernelSource:
    """Where a chapter's kernels come from, on both backends; [`provider`][gpulab.launch.KernelSource.provider]
    binds it to a variant's compile-time parameters.

    * numba: `numba_kernel(name, params)` returns the numba kernel `name` built with `params`.
    * CUDA C: `source` in `package`, compiled with NVRTC with the parameters named in `defines`
      as `-D` macros (`fixed_defines` first: defaults the source needs whatever the variant).
    * `constant`: the `__constant__` symbol a launch may fill first (`K(..., constant=image)`), and
      `sim_constant()` the numpy array that stands in for it on the simulator.
    """

    package: str
    numba_kernel: Callable[[str, dict], Any]
    defines: tuple[str, ...]
    fixed_defines: Mapping[str, int] = field(default_factory=dict)
    source: str = "kernels.cu"
    constant: str | None = None
    sim_constant: Callable[[], np.ndarray] | None = None

    def cuda_defines(self, params: dict) -> dict:
        """The `-D` macros of the CUDA C source for these parameters."""
        return {**self.fixed_defines, **{k: v for k, v in params.items() if k in self.defines}}

    def provider(self, backend: str, params: dict, stream=0) -> KernelProvider:
        """`K(name, grid, block, *args)` for `backend` (`"numba"` or `"cuda-c"`), launching on `stream`."""
        return (CudaCKernels if backend == "cuda-c" else NumbaKernels)(self, params, stream)


class KernelProvider:
    """`K(name, grid, block, *args, constant=None, shared_bytes=0)`: launch the kernel `name`
    built with the variant's parameters on `K.stream` (`constant`: bytes to copy into the
    source's constant symbol first; `shared_bytes`: dynamic shared memory per block). A chapter's launch sequence is written once against it, so the numba and
    CUDA C variants of a step differ only inside the kernels. Kernels are built on first use."""

    backend = ""

    def __init__(self, source: KernelSource, params: dict, stream=0):
        self.source, self.params, self.stream = source, params, stream
        self._kernels: dict = {}

    def kernel(self, name: str):
        """The kernel `name` (built once per provider)."""
        k = self._kernels.get(name)
        if k is None:
            k = self._kernels[name] = self._build(name)
        return k

    def __call__(self, name: str, grid, block, *args, constant: np.ndarray | None = None,
                 shared_bytes: int = 0) -> None:
        k = self.kernel(name)
        if constant is not None:
            self.set_constant(k, args, constant)
        self._launch(k, grid, block, args, shared_bytes)

    def kept(self, name: str, grid, block, pointers: int, *args):
        """A kept launch of the kernel `name`: `go(p_1, ..., p_pointers)` launches it as
        `K(name, grid, block, *args)` would, with the data addresses (ints) `p_i` in place of
        the first `pointers` arguments' (device arrays of the types the calls will have, here
        templates only: nothing is launched) and everything else packed once, so a launch is
        one `struct` pack and one driver call ([`numba_pointer_launch`][gpulab.launch.numba_pointer_launch],
        [`cudac.pointer_launch`][gpulab.cudac.pointer_launch]). For a plan that launches the same
        kernels on the same buffers at every call: a sort pass of twelve arguments took 14-24 us of
        host time through `K` on an H200 host (`docs/benchmarks/gpu-runs/2026-11-29-session31/call5`).
        `None` where a kept launch cannot be made: a stream other than the default one, the
        simulator, arguments the backend's fast launch does not take (the caller then launches
        through `K`). No dynamic shared memory, no constant image."""
        if self.stream:
            return None
        return self._kept(self.kernel(name), grid, block, pointers, args)

    def registers(self, name: str, signature: str | None = None) -> int:
        """Registers per thread of the kernel `name` as built for this GPU (numba: compiled for
        `signature` first). Not on the simulator."""
        raise NotImplementedError

    def _kept(self, kernel, grid, block, pointers: int, args):
        return None

    def _build(self, name: str):
        raise NotImplementedError

    def _launch(self, kernel, grid, block, args, shared_bytes: int = 0) -> None:
        raise NotImplementedError

    def set_constant(self, kernel, args, image: np.ndarray) -> None:
        raise NotImplementedError


class NumbaKernels(KernelProvider):
    """The numba backend of [`KernelProvider`][gpulab.launch.KernelProvider]."""

    backend = "numba"

    def _build(self, name: str):
        return self.source.numba_kernel(name, self.params)

    def _launch(self, kernel, grid, block, args, shared_bytes: int = 0) -> None:
        launch_numba(kernel, grid, block, *args, stream=self.stream, shared_bytes=shared_bytes)

    def _kept(self, kernel, grid, block, pointers: int, args):
        return numba_pointer_launch(kernel, grid, block, args, pointers)

    def registers(self, name: str, signature: str | None = None) -> int:
        return self.kernel(name).compile(signature).regs_per_thread

    # --8<-- [start:set_constant]
    def set_constant(self, kernel, args, image: np.ndarray) -> None:
        """Copy `image` into the constant symbol of the kernel that these `args` will launch
        (cudaMemcpyToSymbol)."""
        from numba import cuda
        from numba.cuda.cudadrv.driver import host_to_device

        if device.on_simulator():
            self.source.sim_constant()[:] = image
            return
        compiled = kernel.compile(tuple(kernel.typeof_pyval(a) for a in args))  # the overload the launch uses
        module = compiled._codelibrary.get_cufunc().module
        symbol, size = module.get_global_symbol(self.source.constant)
        cuda.synchronize()  # the previous launch may still read the symbol
        host_to_device(symbol, image, min(size, image.nbytes))
    # --8<-- [end:set_constant]


class CudaCKernels(KernelProvider):
    """The CUDA C backend of [`KernelProvider`][gpulab.launch.KernelProvider] (pycuda): the
    source compiled with the variant's parameters as `-D` macros; a non-default `stream` is
    honoured as [`cudac.launch`][gpulab.cudac.launch] says."""

    backend = "cuda-c"

    def __init__(self, source: KernelSource, params: dict, stream=0):
        super().__init__(source, params, stream)
        self.defines = source.cuda_defines(params)

    def _build(self, name: str):
        return cudac.kernel(self.source.package, self.source.source, name, self.defines)

    def _launch(self, kernel, grid, block, args, shared_bytes: int = 0) -> None:
        cudac.launch(kernel, grid, block, *args, shared_bytes=shared_bytes, stream=self.stream)

    def _kept(self, kernel, grid, block, pointers: int, args):
        return cudac.pointer_launch(kernel, grid, block, pointers, *args[pointers:])

    def registers(self, name: str, signature: str | None = None) -> int:
        return self.kernel(name).num_regs

    def set_constant(self, kernel, args, image: np.ndarray) -> None:
        from numba import cuda

        cuda.synchronize()  # the previous launch may still read the symbol
        self.copy_to_constant(image)

    def copy_to_constant(self, src, nbytes: int | None = None) -> None:
        """The first `nbytes` of `src` (all of it by default) into the source's `__constant__`
        symbol: device to device from a device array (numba, CuPy, PyTorch), host to device from
        a host array. More bytes than `src` has, or than the symbol holds, is a `LimitError` (the
        callers check their limits first: this is the last line). No synchronization: the caller
        knows whether a launch may still read the symbol."""
        import pycuda.driver as drv

        from gpulab.errors import LimitError

        symbol, size = cudac.load(self.source.package, self.source.source, self.defines).get_global(self.source.constant)
        nbytes = int(src.nbytes if nbytes is None else nbytes)
        if nbytes > min(size, src.nbytes):
            raise LimitError(f"{nbytes} bytes into constant memory: the source array has {src.nbytes} and "
                             f"{self.source.constant} holds {size}")
        if nbytes <= 0:
            return
        if hasattr(src, "__cuda_array_interface__"):  # CUDA C runs on a GPU: no simulator arrays here
            drv.memcpy_dtod(symbol, cudac.ptr(src), nbytes)
        else:
            drv.memcpy_htod(symbol, np.ascontiguousarray(src).reshape(-1).view(np.uint8)[:nbytes])


# --8<-- [start:kept_launches]
class KeptLaunches:
    """A plan's kept launches ([`KernelProvider.kept`][gpulab.launch.KernelProvider.kept]), one
    per role (a key naming the kernel and whatever of its fixed arguments differs between the
    plan's launches of it), each made at its first use. A role whose launch cannot be kept
    holds `None`, and so does every role where `enabled` is False (the simulator, a plan on
    another stream): [`launch`][gpulab.launch.KeptLaunches.launch] then goes through the
    provider, as the plan would without them."""

    __slots__ = ("_go",)

    def __init__(self, enabled: bool = True):
        self._go: dict | None = {} if enabled else None

    @property
    def enabled(self) -> bool:
        return self._go is not None

    def get(self, role, make: Callable[[], Any]):
        """The kept launch (or other kept callable) of `role`: `make()`'s at the first call."""
        if self._go is None:
            return None
        go = self._go.get(role, False)
        if go is False:
            go = self._go[role] = make()
        return go

    def call(self, role, make: Callable[[], Any], otherwise: Callable[..., Any], *args):
        """The kept callable of `role` ([`get`][gpulab.launch.KeptLaunches.get]) called, and its
        result returned; where it cannot be had, `otherwise(*args)`'s (the same work the usual
        way: a plan's kept readback or scan beside its `start` or `run`)."""
        go = self.get(role, make)
        return go() if go is not None else otherwise(*args)

    def launch(self, K, name: str, grid, block, arrays: tuple, fixed: tuple = (), templates: tuple | None = None,
               role=None) -> None:
        """`K(name, grid, block, *arrays, *fixed)`: by the kept launch of `role` (default
        `name`) with the arrays' addresses where every array has one
        ([`vector_address`][gpulab.launch.vector_address]), else through `K`. The kept launch
        is made by `K.kept` from `templates` (numba arrays of the arrays' types standing in for
        them; default the arrays themselves) and `fixed`, which must be the same at every
        launch of the role."""
        kept = self._go
        if kept is not None:  # (`get`, written out: this runs at every launch of a plan)
            role = role or name
            go = kept.get(role, False)
            if go is False:
                go = kept[role] = K.kept(name, grid, block, len(arrays), *(templates or arrays), *fixed)
            if go is not None:
                a = tuple(map(vector_address, arrays))
                if None not in a:
                    go(*a)
                    return
        K(name, grid, block, *arrays, *fixed)
# --8<-- [end:kept_launches]


# ----------------------------------------------------------------------------- plan caches


class PlanCache:
    """The plans (buffers + launches, or compiled kernels) a chapter keeps between calls, keyed
    by a tuple of everything a plan was made for; the least recently used goes first when a new
    one would make more than `maxsize`. `after_evict()` runs once a plan was dropped and
    before the new one is built (to give its memory back first)."""

    def __init__(self, maxsize: int = 1, after_evict: Callable[[], None] | None = None):
        self.maxsize, self.after_evict = maxsize, after_evict
        self._plans: OrderedDict = OrderedDict()
        self._lock = threading.Lock()  # threads share the cache (their keys may differ): the dict's steps are atomic
        self._last: tuple | None = None  # (key, plan, tag) of the last plan returned: tried first, without a hash

    def last(self, tag: tuple):
        """The last plan returned, where [`get`][gpulab.launch.PlanCache.get] was given this
        `tag` for it (compared by `==`), else `None`. A tag is what a caller knows before it
        builds a key: its own arguments, which decide the key (a chapter's variant, backend,
        sizes and context, as the caller passed them). Its look-up is the cheapest way to the
        plan a caller used last: no key is made, nothing resolved. The caller's arguments must
        decide the key, as long as the cache holds the plan."""
        last = self._last
        return last[1] if last is not None and last[2] == tag else None

    def get(self, key: tuple, build: Callable[[], Any], tag: tuple | None = None):
        """The plan kept for `key`, else `build()`'s (kept unless it raises). `build` runs
        outside the lock: two threads may build one key at once, and the later one is kept.

        The last plan returned is tried first, by comparing keys (no hash: a key holds tuples
        of parameters, whose hashes Python computes again at every look-up), with no lock (one
        atomic read; the lock only where a hit brings a new tag): in a one-plan cache it is the
        only one; in a larger one a hit on it may leave the order unchanged, as it is the most
        recent already. So the parts of a key must hash alike where they compare equal (as a
        dict key's must): numbers, strings, tuples of them (a numpy dtype equals its name but
        hashes differently: pass names).

        `tag`: kept with the plan as the last one returned, for [`last`][gpulab.launch.PlanCache.last]."""
        last = self._last
        if last is not None and last[0] == key:
            if tag is not None and last[2] != tag:  # (a call without one leaves the tag: same key, same plan)
                with self._lock:  # (not over a plan another thread has cleared or evicted meanwhile)
                    if self._last is last:
                        self._last = (key, last[1], tag)
            return last[1]
        last = None  # (held no longer: an evicted plan is freed before the next one is built)
        with self._lock:
            plan = self._plans.get(key)
            if plan is not None:
                self._plans.move_to_end(key)
                self._last = (key, plan, tag)
                return plan
            evicted = len(self._plans) >= self.maxsize
            while len(self._plans) >= self.maxsize:
                self._plans.popitem(last=False)
            self._last = None
        if evicted and self.after_evict is not None:
            self.after_evict()
        plan = build()
        with self._lock:
            self._plans[key] = plan
            self._plans.move_to_end(key)
            while len(self._plans) > self.maxsize:
                self._plans.popitem(last=False)
            self._last = (key, plan, tag) if plan is not None and self._plans.get(key) is plan else None
        return plan

    def clear(self) -> None:
        """Drop every plan (their buffers are freed once nothing else holds them)."""
        with self._lock:
            self._plans.clear()
            self._last = None

    def values(self):
        return self._plans.values()

    def __len__(self) -> int:
        return len(self._plans)
