"""The CUDA C backend: ``.cu`` sources in each chapter package, run through pycuda.

* On a machine with an NVIDIA GPU, a driver and pycuda (``pip install 'gpulab[pycuda]'``),
  [`load`][gpulab.cudac.load] compiles a chapter's source with NVRTC (the same compiler the CI check uses;
  pycuda's ``SourceModule`` with ``nvcc`` is the fallback), loads it as a pycuda module, and
  variants launch its kernels on arrays that numba allocated (both share the device's primary
  context, so pointers pass straight through).
* Anywhere else those variants are skipped with the reason [`unavailable_reason`][gpulab.cudac.unavailable_reason] gives.
* [`nvrtc_compile`][gpulab.cudac.nvrtc_compile] compiles the same sources for sm_90 with NVRTC and needs no GPU: CI
  uses it so every CUDA C kernel is compiled on every change.

Compile-time parameters (tile sizes ...) live in the chapter's variant registry and reach the
source as ``-D`` macros, so Python's launch arithmetic and the kernel agree by construction.
"""

from __future__ import annotations

import os
import re
import shutil
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from gpulab import device
from gpulab.errors import BackendUnavailable


@lru_cache(maxsize=1)
def unavailable_reason() -> str | None:
    """Why CUDA C variants cannot run here, or ``None`` when they can."""
    if device.on_simulator():
        return "CUDA C variants need a real GPU; this process runs numba's CUDA simulator"
    try:
        import pycuda.driver  # noqa: F401
    except ImportError as exc:
        return f"pycuda is not installed ({exc}); install it with pip install 'gpulab[pycuda]' on a machine with a CUDA driver"
    except Exception as exc:  # a pycuda that is installed but cannot load libcuda
        return f"pycuda failed to load: {exc}"
    try:
        from cuda.bindings import nvrtc  # noqa: F401  (the runtime compiler: numba-cuda's cu12/cu13 extra)
    except ImportError:
        if shutil.which("nvcc") is None and not os.environ.get("CUDA_HOME"):
            return ("neither NVRTC's Python bindings (pip install 'gpulab[cu13]') nor nvcc (for pycuda's "
                    "SourceModule) is available to compile the kernels")
    return None


def pycuda_status() -> str:
    """``"available"`` or the reason it is not (for ``gpulab info``)."""
    return unavailable_reason() or "available"


def source_text(package: str, filename: str) -> str:
    """The text of ``filename`` shipped inside ``package`` (e.g. ``gpulab.matmul``)."""
    return resources.files(package).joinpath(filename).read_text()


def define_flags(defines: dict | None) -> list[str]:
    return [f"-D{k}={v}" for k, v in sorted((defines or {}).items())]


@lru_cache(maxsize=None)
def _load(package: str, filename: str, defines_items: tuple) -> object:
    reason = unavailable_reason()
    if reason:
        raise BackendUnavailable(reason)
    import pycuda.autoprimaryctx  # noqa: F401  (share numba's primary context)
    import pycuda.driver as drv

    from numba import cuda

    cuda.current_context()  # make sure numba's context (the primary one) exists first
    cc = device.info().compute_capability
    arch = f"sm_{cc[0]}{cc[1]}"
    source = source_text(package, filename)
    defines = dict(defines_items)
    # Compile with NVRTC — the compiler CI's check uses, so what runs is what was checked —
    # and load the cubin into pycuda. On the H200 this also ran the warptile kernel 18% faster
    # than pycuda's SourceModule (nvcc) with the same CUDA 13.0
    # (docs/benchmarks/matmul-compilers-h200.json). SourceModule remains the fallback where
    # NVRTC's Python bindings are not installed.
    try:
        report = nvrtc_compile(source, filename, defines, arch=arch, lineinfo=False)
    except ImportError:
        from pycuda.compiler import SourceModule

        return SourceModule(source, options=define_flags(defines) + ["-std=c++17"], arch=arch, no_extern_c=True)
    if not report.ok:
        raise RuntimeError(f"NVRTC could not compile {package}/{filename} with {defines}:\n{report.log}")
    return drv.module_from_buffer(report.cubin)


def load(package: str, filename: str, defines: dict | None = None):
    """Compile (once per set of defines) and return the pycuda module of a chapter's source."""
    return _load(package, filename, tuple(sorted((defines or {}).items())))


def kernel(package: str, filename: str, name: str, defines: dict | None = None):
    """A kernel of a chapter's CUDA C source, as a pycuda function: the same object for the same
    arguments (made once), so that the argument format [`launch`][gpulab.cudac.launch] prepares
    on it stays prepared. (A new function object per call was prepared again at every launch:
    378 times in one paper-scale GP run, measured with cProfile on an H100 host.)"""
    return _kernel(package, filename, name, tuple(sorted((defines or {}).items())))


@lru_cache(maxsize=None)
def _kernel(package: str, filename: str, name: str, defines_items: tuple):
    return _load(package, filename, defines_items).get_function(name)


def ptr(array) -> int:
    """Device address of a numba/CuPy device array (anything with ``__cuda_array_interface__``)."""
    return int(array.__cuda_array_interface__["data"][0])


def _pointer(a):
    """The device address of `a` if it is a device array (else `None`). numba builds its
    arrays' `__cuda_array_interface__` dict on every read (about 4 us); an array's address never
    changes, so a numba array keeps it after the first read."""
    d = getattr(a, "__dict__", None)
    if d is not None:
        p = d.get("_gpulab_ptr")
        if p is not None:
            return p
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is None:
        return None
    p = int(cai["data"][0])
    if d is not None and type(a).__module__.startswith("numba."):
        d["_gpulab_ptr"] = p
    return p


def launch(fn, grid, block, *args, shared_bytes: int = 0, stream=0) -> None:
    """Launch a pycuda function on the legacy default stream.

    Device arrays (anything with `__cuda_array_interface__`) are passed as pointers; Python ints
    and bools (and numpy bools) as `int32`; numpy scalars keep their type; anything else is a
    TypeError (pycuda's own allocations and argument handlers are not used here). Dynamic shared
    memory above 48 KiB is opted into first, as CUDA requires. The arguments are packed in one
    `struct` format, made once per tuple of argument types, and handed to pycuda's kernel launch
    (what its prepared call does after packing; the prepared call itself where that entry point
    is missing): a launch of a sort pass with twelve arguments took about 50 us of host time
    through pycuda's unprepared call on an H100 host.

    pycuda cannot launch on another library's stream, so a `stream` other than the default one
    (a numba stream) is honoured by synchronizing: gpulab waits for `stream` before the launch
    and for the device after it, so the kernel is ordered between the caller's earlier and later
    work on that stream (at the cost of the asynchrony).
    """
    key = tuple(map(type, args))
    packing = _FORMATS.get(key)
    if packing is None:
        packing = _FORMATS[key] = _packing(key)
    packer, converters, fmt = packing
    data = [a if c is None else c(a) for c, a in zip(converters, args)]
    if shared_bytes > 48 * 1024 and getattr(fn, "_gpulab_shared", 0) != shared_bytes:
        import pycuda.driver as drv

        fn.set_attribute(drv.function_attribute.MAX_DYNAMIC_SHARED_SIZE_BYTES, shared_bytes)
        fn._gpulab_shared = shared_bytes
    grid = tuple(grid) + (1,) * (3 - len(grid))
    block = tuple(block) + (1,) * (3 - len(block))
    if stream:
        stream.synchronize()
    run = getattr(fn, "_launch_kernel", None)
    if packer is not None and run is not None and not getattr(fn, "texrefs", None):
        run(grid, block, packer.pack(*data), shared_bytes, None)
    else:
        if getattr(fn, "arg_format", None) != fmt:
            fn.prepare(fmt)
        fn.prepared_call(grid, block, *data, shared_size=shared_bytes)
    if stream:
        import pycuda.driver as drv

        drv.Context.synchronize()


def pointer_launch(fn, grid, block, pointers: int, *tail):
    """`go(p_1, ..., p_pointers)`: [`launch`][gpulab.cudac.launch] of `fn` on the legacy default
    stream with `pointers` device addresses (ints) first and the fixed arguments `tail` after
    them, the arguments' packing and everything but the addresses done once, here. A public
    call that has its arrays' addresses at hand (a CuPy array's `.data.ptr`) launches through
    it with one `struct` pack and pycuda's kernel launch: 16.7 us of host time per launch
    through `launch` with three CuPy arrays on an H200 host, whose interfaces it reads, against
    5.7 us for pycuda's launch alone (`docs/benchmarks/gpu-runs/2026-11-29-session32/call4-profile.txt`).
    `go` keeps `tail` alive (its device arrays are passed by address: a workspace freed while a
    kept launch still wrote to it would be another allocation's memory). No dynamic shared
    memory. `None` where `launch` would not take this way (no packer for these types, pycuda
    without the entry point, texture references)."""
    import struct

    run = getattr(fn, "_launch_kernel", None)
    types = (int,) * pointers + tuple(map(type, tail))
    packer, converters, fmt = _packing(types)
    if packer is None or run is None or getattr(fn, "texrefs", None):
        return None
    fmt = "P" * pointers + fmt[pointers:]  # the addresses as pointers, not as `launch`'s int32 of an int
    packer = struct.Struct(fmt)
    rest = tuple(a if c is None else c(a) for c, a in zip(converters[pointers:], tail))
    g3 = tuple(grid) + (1,) * (3 - len(grid))
    b3 = tuple(block) + (1,) * (3 - len(block))
    pack = packer.pack

    def go(*addresses):
        run(g3, b3, pack(*addresses, *rest), 0, None)

    go.keep = tail  # (the arrays behind `rest`'s addresses live as long as the launch)
    return go


_FORMATS: dict = {}  # tuple of argument types -> (struct.Struct or None, per argument: None or its converter, format)


def _packing(types: tuple):
    """(`struct` packer, converters, format) of arguments of these types (see `launch`). Codes
    Python's `struct` lacks (complex numpy scalars, which pycuda's own packer takes) give no
    packer: pycuda's prepared call packs them."""
    import struct

    import numpy as np

    codes, converters = [], []
    for t in types:
        if issubclass(t, np.generic) and not issubclass(t, np.bool_):
            codes.append(np.dtype(t).char)
            converters.append(None)
        elif issubclass(t, (bool, int, np.bool_)):
            codes.append("i")
            converters.append(int)
        else:
            codes.append("P")
            converters.append(_device_pointer)
    if len(_FORMATS) > 4096:
        _FORMATS.clear()
    fmt = "".join(codes)
    try:
        packer = struct.Struct(fmt)
    except struct.error:
        packer = None
    return packer, tuple(converters), fmt


def _device_pointer(a) -> int:
    p = _pointer(a)
    if p is None:
        raise TypeError(f"cannot pass a {type(a).__name__} to a CUDA C kernel: a device array, an int "
                        "or a numpy scalar")
    return p


# --------------------------------------------------------------------------- NVRTC (no GPU)


@dataclass
class CompileReport:
    """What NVRTC + ptxas said about one source compiled for one architecture."""

    source: str
    arch: str
    ok: bool
    log: str
    resources: dict  # kernel name -> {"registers": int, "spill_bytes": int, "stack": int, "shared": int}
    cubin: bytes | None = None  # the compiled module (loadable with pycuda.driver.module_from_buffer)


_PTXAS_FUNC = re.compile(r"Compiling entry function '(\w+)'")
_PTXAS_USED = re.compile(r"Used (\d+) registers")
_PTXAS_SPILL = re.compile(r"(\d+) bytes spill stores, (\d+) bytes spill loads")
_PTXAS_STACK = re.compile(r"(\d+) bytes stack frame")
_PTXAS_SMEM = re.compile(r"(\d+) bytes smem")


def parse_ptxas(log: str) -> dict:
    """Registers, spills, stack frame and static shared memory per kernel from ``ptxas -v`` output."""
    out: dict = {}
    current = None
    for line in log.splitlines():
        m = _PTXAS_FUNC.search(line)
        if m:
            current = m.group(1)
            out[current] = {"registers": 0, "spill_bytes": 0, "stack": 0, "shared": 0}
            continue
        if current is None:
            continue
        if m := _PTXAS_STACK.search(line):
            out[current]["stack"] = int(m.group(1))
        if m := _PTXAS_SPILL.search(line):
            out[current]["spill_bytes"] = int(m.group(1)) + int(m.group(2))
        if m := _PTXAS_USED.search(line):
            out[current]["registers"] = int(m.group(1))
        if m := _PTXAS_SMEM.search(line):
            out[current]["shared"] = int(m.group(1))
    return out


def _include_dirs() -> list[str]:
    try:
        import nvidia.cu13 as cu13  # from numba-cuda's cu13 extra
    except ImportError:
        return []
    base = list(cu13.__path__)[0]
    return [p for p in (os.path.join(base, "include"), os.path.join(base, "include", "cccl")) if os.path.isdir(p)]


def nvrtc_compile(source: str, name: str = "kernel.cu", defines: dict | None = None, arch: str = "sm_90",
                  lineinfo: bool = True) -> CompileReport:
    """Compile CUDA C source to a cubin for ``arch`` with NVRTC and report ptxas' resource usage.

    On the GPU machines (their NVRTC, CUDA 13.0) a successful compile sometimes comes back with
    an empty log, so with no resources: in a whole-suite run on an H100 it happened to several
    sources, also when compiled a second time with one more macro defined. The dev machine's and
    CI's NVRTC (13.5) always gave the report. `CompileReport.resources` is then empty; the
    checks that read it say so (`tests.conftest.require_ptxas_report`)."""
    from cuda.bindings import nvrtc

    def check(result):
        err = result[0]
        if err != nvrtc.nvrtcResult.NVRTC_SUCCESS:
            raise RuntimeError(f"NVRTC error {err}")
        return result[1:] if len(result) > 2 else (result[1] if len(result) == 2 else None)

    prog = check(nvrtc.nvrtcCreateProgram(source.encode(), name.encode(), 0, [], []))
    opts = [f"--gpu-architecture={arch}", "-std=c++17", "--ptxas-options=-v"] + (["-lineinfo"] if lineinfo else [])
    opts += define_flags(defines) + [f"-I{d}" for d in _include_dirs()]
    (err,) = nvrtc.nvrtcCompileProgram(prog, len(opts), [o.encode() for o in opts])
    # NVRTC writes into the buffers it is given: each must be a fresh bytes object. (`b" " * n`
    # is not: for n == 1 — an empty log, just its NUL — Python returns its one shared b" ",
    # and NVRTC would overwrite that for the whole process.)
    log_size = check(nvrtc.nvrtcGetProgramLogSize(prog))
    log = bytes(log_size)
    check(nvrtc.nvrtcGetProgramLog(prog, log))  # (unchecked, a failed read would leave an empty log)
    text = log.decode(errors="replace").rstrip("\x00 \n")
    ok = err == nvrtc.nvrtcResult.NVRTC_SUCCESS
    cubin = None
    if ok:
        size = check(nvrtc.nvrtcGetCUBINSize(prog))
        cubin = bytes(size)
        nvrtc.nvrtcGetCUBIN(prog, cubin)
    nvrtc.nvrtcDestroyProgram(prog)
    return CompileReport(source=name, arch=arch, ok=ok, log=text, resources=parse_ptxas(text) if ok else {}, cubin=cubin)
