"""Choose where kernels run: a real CUDA GPU, or numba's CUDA simulator.

numba reads ``NUMBA_ENABLE_CUDASIM`` once, when ``numba.cuda`` is first imported, so the
choice has to be made before that import. ``import gpulab`` makes it (this module touches
nothing but the CUDA driver library through `ctypes`).

The choice, in order of precedence:

1. ``GPULAB_DEVICE=gpu`` forces the real GPU (numba compiles for the driver; used by the
   PTX compile checks, which need the real compiler but no GPU);
   ``GPULAB_DEVICE=sim`` forces the simulator.
2. ``NUMBA_ENABLE_CUDASIM=1`` set by the user means the simulator.
3. Otherwise (``GPULAB_DEVICE=auto`` or unset): the GPU if the CUDA driver loads and
   reports at least one device, else the simulator.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import sys
import threading
from dataclasses import dataclass, asdict
from functools import lru_cache

ENV_VAR = "GPULAB_DEVICE"
_MODES = ("auto", "gpu", "sim")


def _driver_device_count() -> int:
    """Number of CUDA devices the driver reports; 0 when there is no usable driver."""
    names = ["libcuda.so.1", "libcuda.so", ctypes.util.find_library("cuda") or ""]
    for name in filter(None, names):
        try:
            lib = ctypes.CDLL(name)
        except OSError:
            continue
        try:
            if lib.cuInit(0) != 0:
                return 0
            count = ctypes.c_int(0)
            if lib.cuDeviceGetCount(ctypes.byref(count)) != 0:
                return 0
            return count.value
        except AttributeError:
            return 0
    return 0


def _choose_mode() -> str:
    requested = os.environ.get(ENV_VAR, "auto").strip().lower() or "auto"
    if requested not in _MODES:
        raise ValueError(f"{ENV_VAR}={requested!r}: expected one of {', '.join(_MODES)}")
    if requested == "auto":
        if os.environ.get("NUMBA_ENABLE_CUDASIM", "0") not in ("", "0"):
            return "sim"
        return "gpu" if _driver_device_count() > 0 else "sim"
    return requested


def _apply(mode: str) -> None:
    want_sim = mode == "sim"
    if "numba.cuda" in sys.modules:
        from numba import config  # already imported, so this costs nothing

        if bool(config.ENABLE_CUDASIM) != want_sim:
            raise RuntimeError(
                f"gpulab chose the {'simulator' if want_sim else 'GPU'} but numba.cuda was "
                "imported earlier with the other setting. Import gpulab before numba, or set "
                f"{ENV_VAR}=sim|gpu / NUMBA_ENABLE_CUDASIM before starting Python."
            )
    if want_sim:
        os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    else:
        os.environ.pop("NUMBA_ENABLE_CUDASIM", None)
    if "numba.core.config" in sys.modules:
        # numba itself was imported (e.g. by a tool naming one of its classes) but not yet
        # numba.cuda, which is what reads the switch: set numba's copy of it too.
        sys.modules["numba.core.config"].ENABLE_CUDASIM = int(want_sim)


MODE: str = _choose_mode()
"""``"gpu"`` or ``"sim"``: fixed for the life of the process."""
_apply(MODE)


def on_simulator() -> bool:
    """True when kernels run on numba's CUDA simulator (on the CPU)."""
    return MODE == "sim"


def per_thread_default_stream() -> bool:
    """Whether stream 0 means the per-thread default stream here (numba's or cuda-python's
    setting), which a driver call given stream 0 (the legacy default stream) would not honour."""
    env = os.environ.get("CUDA_PYTHON_CUDA_PER_THREAD_DEFAULT_STREAM", "0").strip().lower()
    if env not in ("", "0", "false"):
        return True
    from numba.cuda import config

    return bool(getattr(config, "CUDA_PER_THREAD_DEFAULT_STREAM", 0))


@dataclass(frozen=True)
class RawDriver:
    """The CUDA driver's entry points that gpulab's hot paths call through `ctypes`, with their
    argument types set once: a call is one foreign call, where numba's and cuda-python's
    wrappers add several microseconds of checks and conversions to each."""

    lib: object
    launch: object  # cuLaunchKernel(f, gx, gy, gz, bx, by, bz, shared, stream, params, extra)
    copy_back: object  # cuMemcpyDtoHAsync_v2(host, device, bytes, stream)
    record: object  # cuEventRecord(event, stream)
    wait: object  # cuEventSynchronize(event)


_RAW: list = []


def raw_driver() -> RawDriver | None:
    """The driver's entry points ([`RawDriver`][gpulab.device.RawDriver]), looked up once; `None` on the
    simulator, where the driver library or an entry point is missing, or where stream 0 is the
    per-thread default stream (the entry points are called with the legacy one)."""
    if not _RAW:
        _RAW.append(_load_raw_driver())
    return _RAW[0]


def _load_raw_driver() -> RawDriver | None:
    if on_simulator() or per_thread_default_stream():
        return None
    try:
        lib = ctypes.CDLL("libcuda.so.1")
        vp, size = ctypes.c_void_p, ctypes.c_size_t
        launch = lib.cuLaunchKernel
        launch.argtypes = [vp] + [ctypes.c_uint] * 7 + [vp] * 3
        copy_back = lib.cuMemcpyDtoHAsync_v2
        copy_back.argtypes = [vp, ctypes.c_uint64, size, vp]
        record = lib.cuEventRecord
        record.argtypes = [vp, vp]
        wait = lib.cuEventSynchronize
        wait.argtypes = [vp]
        for f in (launch, copy_back, record, wait):
            f.restype = ctypes.c_int
    except (OSError, AttributeError):
        return None
    return RawDriver(lib, launch, copy_back, record, wait)


def raise_driver_error(err: int, call: str):
    """A driver call's error code as numba's `CudaAPIError`, named (`call`: what failed), as
    numba raises it for its own calls."""
    from numba.cuda.cudadrv.driver import CudaAPIError

    try:
        from cuda.bindings import driver as cu

        name = cu.cuGetErrorName(cu.CUresult(err))[1].decode()
    except Exception:  # noqa: BLE001
        name = f"CUDA error {err}"
    raise CudaAPIError(err, f"{call} failed: {name}")


def wait_event():
    """A CUDA event to wait on, not to time with: it records no timestamp, which makes it cheaper
    to record and to wait for. (The simulator's events take no arguments.)"""
    from numba import cuda

    return cuda.event() if on_simulator() else cuda.event(timing=False)


class Readback:
    """A small device result's way back to the host: a page-locked (pinned) host buffer of a
    fixed shape and dtype, and the event that says a copy into it has arrived. Both are made
    once, with the plan that owns them; every use after that allocates nothing on the device
    or in host memory (a pinned copy is one DMA, with no staging buffer in between).

    Two ways to read `d_src` (a device array of `host`'s shape) into `host`:

    * [`fetch`][gpulab.device.Readback.fetch]`(d_src, stream)`: copy and wait, the one host
      synchronization of a call. On the default stream (`0` or `None`) this is numba's
      synchronous copy (one driver call, behind all the work queued before it); on another
      stream it is `start(d_src, stream)()`.
    * [`start`][gpulab.device.Readback.start]`(d_src, stream)`: queue the copy behind the work
      already on `stream`, record the event behind it and return at once, with the function
      that waits for the event and returns `host`. Work queued after `start` (the next kernel)
      runs on the device while the host waits.

    ```python
    back = Readback(1, np.uint32)           # once, with the plan
    ...
    wait = back.start(d_max, stream)        # every call: the copy is queued ...
    launch_next_kernel()                    # ... more work queued behind it ...
    largest = int(wait()[0])                # ... and the host waits for the copy only
    ```
    """

    __slots__ = ("host", "arrived")

    def __init__(self, shape, dtype):
        from numba import cuda

        self.host = cuda.pinned_array(shape, dtype)
        """The pinned host buffer the copies land in (read it after a wait)."""
        self.arrived = wait_event()
        """The event `start` records behind its copy."""

    def start(self, d_src, stream=0, into=None):
        """Queue the copy of `d_src` into `host` (or into `into`, a view of `host`: several
        small copies behind one event) after the work queued on `stream`, record the event
        behind it, and return [`wait`][gpulab.device.Readback.wait] without waiting. On
        stream `0`/`None` numba would copy synchronously, so the copy is queued on the default
        stream's object instead."""
        from numba import cuda

        s = stream or cuda.default_stream()
        _copy_back(d_src, self.host if into is None else into, s)
        self.arrived.record(s)
        return self.wait

    def kept(self, d_src):
        """[`start`][gpulab.device.Readback.start]`(d_src, 0)` for this one source, with
        everything but the two driver calls done once, here: `go()` queues the copy of `d_src`
        into `host` on the legacy default stream, records the event behind it and returns a
        function that waits for the event (one more driver call) and returns `host`. For a
        plan that reads the same small buffer back at every call: `start` took about 30 us of
        host time on an H200 host, most of it in numba's argument checks and in cuda-python's
        wrappers of the two calls (`docs/benchmarks/gpu-runs/2026-11-29-session31/call5`).
        `d_src` must have `host`'s dtype and size and be contiguous (a `ValueError` here, as
        `start` raises it). `None` where the driver's entry points cannot be had
        ([`raw_driver`][gpulab.device.raw_driver]: the simulator, among others). `go` keeps
        `d_src` alive."""
        _check_copy_back(d_src, self.host)
        n = self.host.nbytes
        drv = raw_driver()
        if drv is None or not n:
            return None
        src, dst, event = int(d_src.device_ctypes_pointer.value), self.host.ctypes.data, int(self.arrived.handle)
        copy_back, record, sync, host = drv.copy_back, drv.record, drv.wait, self.host

        def wait():
            err = sync(event)
            if err:
                raise_driver_error(err, "cuEventSynchronize")
            return host

        def go():
            numba_context_current()
            err = copy_back(dst, src, n, None) or record(event, None)
            if err:
                raise_driver_error(err, "cuMemcpyDtoHAsync / cuEventRecord")
            return wait

        go.keep = (d_src, self)  # (the source's memory and the event live as long as the copy)
        return go

    def wait(self):
        """Wait for the last copy [`start`][gpulab.device.Readback.start] queued; returns `host`."""
        self.arrived.synchronize()
        return self.host

    def fetch(self, d_src, stream=0):
        """Copy `d_src` into `host` once everything queued before it on `stream` is done, and
        return `host`: numba's synchronous copy on the default stream (`0`/`None`), else
        `start` and `wait`."""
        if stream:
            return self.start(d_src, stream)()
        _copy_back(d_src, self.host, 0)
        return self.host


def _copy_back(d_src, dst, stream) -> None:
    """``d_src.copy_to_host(dst, stream=stream)`` for a contiguous numba device array of
    ``dst``'s dtype and size, as one driver call: numba's copy checks and reshapes both arrays
    at every call, which a `Readback`'s fixed buffer does not need (six copies a GP
    generation; the saving per copy was not timed alone). Another dtype or size, or either
    array not contiguous, is a `ValueError`, on a GPU and on the simulator (where the copy is
    then numba's). Shapes may differ where dtype and size agree (numba's copy required them
    to match after squeezing)."""
    n = dst.nbytes
    _check_copy_back(d_src, dst)
    if on_simulator():
        d_src.copy_to_host(dst, stream=stream)
    elif n:
        from numba.cuda.cudadrv.driver import device_to_host

        device_to_host(dst, d_src, n, stream=stream)


def _check_copy_back(d_src, dst) -> None:
    """A `ValueError` naming what differs where `d_src` (device) and `dst` (host) differ in dtype
    or size, or either is not contiguous."""
    if (d_src.dtype != dst.dtype or d_src.nbytes != dst.nbytes or not d_src.is_c_contiguous()
            or not dst.flags.c_contiguous):
        raise ValueError(f"a readback of {d_src.size} {d_src.dtype} on the device (contiguous: "
                         f"{d_src.is_c_contiguous()}) into {dst.size} {dst.dtype} on the host (contiguous: "
                         f"{dst.flags.c_contiguous}): dtype, size and layout must match")


_CONTEXT = threading.local()


def numba_context_current() -> None:
    """Make numba's CUDA context current in this host thread, once a thread: what a driver call
    made through `ctypes` ([`raw_driver`][gpulab.device.raw_driver]) needs, where numba's own
    calls make it current themselves (a kept launch or copy made in one thread and called in
    another would otherwise find no context there)."""
    if not getattr(_CONTEXT, "made", False):
        from numba import cuda

        cuda.current_context()
        _CONTEXT.made = True


def upload(d_dst, pinned, nbytes: int | None = None) -> None:
    """Queue the copy of `pinned` (a page-locked host array of `d_dst`'s shape, such as
    `Readback.host` or `cuda.pinned_array`) into `d_dst` on the default stream and return at
    once: numba's copy on stream `0` would wait for the device first. `nbytes`: copy only the
    first `nbytes` bytes (of byte arrays: a buffer's used part, without slicing either array,
    which costs tens of microseconds of host time). The caller must not change `pinned` until
    the device has passed the copy (a later synchronization)."""
    from numba import cuda

    if nbytes is None:
        d_dst.copy_to_device(pinned, stream=cuda.default_stream())
    elif on_simulator():
        d_dst[:nbytes].copy_to_device(pinned[:nbytes])
    else:
        from numba.cuda.cudadrv.driver import host_to_device

        host_to_device(d_dst, pinned, nbytes, stream=cuda.default_stream())


@dataclass(frozen=True)
class DeviceInfo:
    """What the book's exercises need to know about the device they run on."""

    mode: str
    name: str
    compute_capability: tuple[int, int]
    sm_count: int
    max_threads_per_block: int
    shared_memory_per_block: int
    shared_memory_per_block_optin: int
    constant_memory: int
    warp_size: int

    def as_dict(self) -> dict:
        return asdict(self)


# Hardware limits of the simulator: those of the H200 the book measures on, so that a
# size that fails on the GPU for lack of shared or constant memory fails the same way here.
_SIM_LIMITS = dict(
    compute_capability=(9, 0),
    sm_count=1,
    max_threads_per_block=1024,
    shared_memory_per_block=48 * 1024,
    shared_memory_per_block_optin=227 * 1024,
    constant_memory=64 * 1024,
    warp_size=32,
)


@lru_cache(maxsize=1)
def info() -> DeviceInfo:
    """Describe the device kernels run on (queried once). Whether the CUDA C backend can run
    here is [`gpulab.cudac`][gpulab.cudac]'s to say (`cudac.pycuda_status()`)."""
    if on_simulator():
        return DeviceInfo(mode="sim", name="numba CUDA simulator (CPU)", **_SIM_LIMITS)
    from numba import cuda

    dev = cuda.get_current_device()
    attr = dev.get_device_identity  # noqa: F841  (touch: raises early if no context)
    return DeviceInfo(
        mode="gpu",
        name=dev.name.decode() if isinstance(dev.name, bytes) else str(dev.name),
        compute_capability=tuple(dev.compute_capability),
        sm_count=dev.MULTIPROCESSOR_COUNT,
        max_threads_per_block=dev.MAX_THREADS_PER_BLOCK,
        shared_memory_per_block=dev.MAX_SHARED_MEMORY_PER_BLOCK,
        shared_memory_per_block_optin=dev.MAX_SHARED_MEMORY_PER_BLOCK_OPTIN,
        constant_memory=dev.TOTAL_CONSTANT_MEMORY,
        warp_size=dev.WARP_SIZE,
    )


def too_old_for(need) -> str | None:
    """Why this device cannot run a kernel that needs compute capability `need` (a (major,
    minor) pair; `None`: any), or `None` where it can. The simulator reports sm_90's."""
    if need is None:
        return None
    cc = tuple(info().compute_capability)
    if cc >= tuple(need):
        return None
    return f"needs compute capability {need[0]}.{need[1]} or newer; this GPU has {cc[0]}.{cc[1]}"


@lru_cache(maxsize=1)
def l2_bytes() -> int:
    """The L2 cache's size in bytes of the device this process uses (one per process; on the
    simulator 50 MiB, what an H100 reports)."""
    if on_simulator():
        return 50 * 1024 * 1024
    from numba import cuda

    return int(cuda.get_current_device().L2_CACHE_SIZE)


@dataclass(frozen=True)
class SMLimits:
    """What one SM holds at once (the CUDA occupancy calculator's inputs): threads, blocks,
    shared memory (bytes, and the bytes the driver reserves per block) and 32-bit registers."""

    threads: int = 2048
    blocks: int = 32
    shared: int = 228 * 1024
    reserved_shared: int = 1024
    registers: int = 65536


@lru_cache(maxsize=1)
def sm_limits() -> SMLimits:
    """This GPU's per-SM limits (sm_90's on the simulator, as `info()` gives the H200's)."""
    if on_simulator():
        return SMLimits()
    from numba import cuda

    dev = cuda.get_current_device()
    return SMLimits(threads=dev.MAX_THREADS_PER_MULTIPROCESSOR, blocks=dev.MAX_BLOCKS_PER_MULTIPROCESSOR,
                    shared=dev.MAX_SHARED_MEMORY_PER_MULTIPROCESSOR,
                    reserved_shared=dev.RESERVED_SHARED_MEMORY_PER_BLOCK,
                    registers=dev.MAX_REGISTERS_PER_MULTIPROCESSOR)


def resident_blocks(threads: int, shared_bytes: int, registers: int, limits: SMLimits | None = None) -> int:
    """How many blocks of `threads` threads, each using `shared_bytes` of shared memory and
    `registers` registers per thread, one SM runs at once: the least of what its threads,
    blocks, shared memory and registers allow, as the CUDA occupancy calculator counts them
    (shared memory per block with the driver's reserve, in units of 128 bytes; registers per
    warp in units of 256, from the four quarters of the SM's file). At least 1."""
    lim = limits or sm_limits()
    warps = -(-threads // 32)
    by_threads = lim.threads // (warps * 32)
    per_block = -(-(shared_bytes + lim.reserved_shared) // 128) * 128  # allocated in units of 128 bytes
    by_shared = lim.shared // per_block if shared_bytes else lim.blocks
    return max(1, min(lim.blocks, by_threads, by_shared, _warps_by_registers(registers, lim) // warps))


def _warps_by_registers(registers: int, lim: SMLimits) -> int:
    """The warps an SM's register file holds at `registers` a thread: registers per warp in
    units of 256, from the four quarters of the file."""
    per_warp = -(-max(registers, 1) * 32 // 256) * 256
    return 4 * ((lim.registers // 4) // per_warp)


def registers_fit(threads: int, registers: int, limits: SMLimits | None = None) -> bool:
    """Whether one block of `threads` threads at `registers` registers per thread fits an SM's
    register file (counted as `resident_blocks` counts it): a launch that does not fails with
    LAUNCH_OUT_OF_RESOURCES."""
    return _warps_by_registers(registers, limits or sm_limits()) >= -(-threads // 32)


def release_memory() -> None:
    """Give freed device buffers back to the driver now, before a large allocation.

    numba frees a device array when its owner is collected, and then only at its next
    "deallocation flush": buffers held by objects in reference cycles (a plan whose kernels
    close over the plan) stay allocated until the garbage collector runs. A benchmark that
    drops an 80 GiB plan and allocates the next one needs both steps, in this order."""
    import gc

    gc.collect()
    if on_simulator():
        return
    from numba import cuda

    ctx = cuda.current_context()
    for pending in (getattr(getattr(ctx, "memory_manager", None), "deallocations", None),
                    getattr(ctx, "deallocations", None)):
        if pending is not None:
            pending.clear()  # numba's clear() runs the pending frees


def is_out_of_memory(exc: BaseException) -> bool:
    """True for the device allocators' out-of-memory errors (numba's CUDA_ERROR_OUT_OF_MEMORY,
    pycuda's MemoryError), whichever backend raised them."""
    return isinstance(exc, MemoryError) or "OUT_OF_MEMORY" in str(exc) or "out of memory" in str(exc).lower()


def free_bytes() -> int:
    """The device's free memory in bytes (numba's context); on the simulator ``2**40``, so that
    a check of whether something fits the device never refuses there."""
    if on_simulator():
        return 2**40
    from numba import cuda

    return int(cuda.current_context().get_memory_info()[0])


def free_memory_text() -> str:
    """``"1.7 of 139.8 GiB free"`` on a GPU (for out-of-memory messages), ``""`` on the simulator."""
    if on_simulator():
        return ""
    from numba import cuda

    free, total = cuda.current_context().get_memory_info()
    return f"{free / 2**30:.1f} of {total / 2**30:.1f} GiB free"
