"""The benchmark's peer: CUB's radix sort alone, called directly (``cub_peer.cu``).

``cupy.sort`` copies its input before CUB sorts it (measured on the H200: 6.71 ms at 2^28 keys,
of which the copy is 1.30 ms), so comparing our sorts with it flatters them. Our sorts read the
input in place and write the sorted keys to another buffer; CUB's ``DeviceRadixSort::SortKeys``
does exactly that (and ``SortPairs`` with 32-bit values), so the peer here is that call, with
its temporary storage allocated once outside the timed region.

The wrapper is compiled with ``nvcc`` on first use (about 15 s; cached) into a shared library
loaded with `ctypes`; it shares the device's primary context with numba, so numba device
arrays pass straight in. Without ``nvcc`` or a GPU, `unavailable_reason` says why and the
benchmark records no peer rather than a different one.
"""

from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
from functools import lru_cache
from importlib import resources
from pathlib import Path

import numpy as np

SOURCE = "cub_peer.cu"
NAME_KEYS = "CUB DeviceRadixSort::SortKeys (direct call, no input copy)"
NAME_PAIRS = "CUB DeviceRadixSort::SortPairs, uint32 values (direct call, no input copy)"


def _nvcc() -> str | None:
    for cand in (shutil.which("nvcc"), "/usr/local/cuda/bin/nvcc"):
        if cand and os.path.exists(cand):
            return cand
    return None


def unavailable_reason() -> str | None:
    from gpulab import device

    if device.on_simulator():
        return "the CUB peer needs a real GPU"
    if _nvcc() is None:
        return "nvcc is not installed: the CUB peer is compiled on first use"
    return None


@lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    """Compile (once; cached by source hash) and load the CUB wrapper."""
    reason = unavailable_reason()
    if reason:
        raise RuntimeError(reason)
    from gpulab import device

    src = resources.files("gpulab.radix").joinpath(SOURCE).read_text()
    cc = device.info().compute_capability
    arch = f"sm_{cc[0]}{cc[1]}"
    tag = hashlib.sha256((src + arch).encode()).hexdigest()[:12]
    cache = Path(os.environ.get("GPULAB_CACHE", Path(tempfile.gettempdir()) / "gpulab-cache"))
    cache.mkdir(parents=True, exist_ok=True)
    lib = cache / f"libgpulab_cub_{tag}.so"
    if not lib.exists():
        with tempfile.TemporaryDirectory() as tmp:
            cu = Path(tmp) / SOURCE
            cu.write_text(src)
            out = Path(tmp) / lib.name
            proc = subprocess.run([_nvcc(), "-O3", f"-arch={arch}", "-shared", "-Xcompiler", "-fPIC", "-o", str(out), str(cu)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise RuntimeError(f"nvcc could not build the CUB peer:\n{proc.stderr[-3000:]}")
            shutil.move(str(out), lib)
    dll = ctypes.CDLL(str(lib))
    size_t_p = ctypes.POINTER(ctypes.c_size_t)
    dll.gpulab_cub_temp_bytes.argtypes = [ctypes.c_int, ctypes.c_int, size_t_p]
    dll.gpulab_cub_sort_keys.argtypes = [ctypes.c_void_p, ctypes.c_size_t, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int]
    dll.gpulab_cub_sort_pairs.argtypes = [ctypes.c_void_p, ctypes.c_size_t] + [ctypes.c_void_p] * 4 + [ctypes.c_int]
    return dll


def version() -> str:
    v = library().gpulab_cub_version()
    return f"{v // 100000}.{v // 100 % 1000}.{v % 100}"


def _ptr(a) -> int:
    return int(a.__cuda_array_interface__["data"][0])


def _check(err: int, what: str) -> None:
    if err != 0:
        raise RuntimeError(f"CUB {what} failed with cudaError {err}")


def sorter(d_keys, pairs: bool = False):
    """A launch that sorts ``d_keys`` (uint32, on the device) into a second buffer with CUB —
    with uint32 values (0..n-1, made here, outside the timed launch) when ``pairs``. Returns
    ``(launch, keys_out, values_out)``."""
    from numba import cuda

    dll = library()
    n = int(d_keys.size)
    nbytes = ctypes.c_size_t(0)
    _check(dll.gpulab_cub_temp_bytes(int(pairs), n, ctypes.byref(nbytes)), "temp-storage query")
    temp = cuda.device_array(max(int(nbytes.value), 1), np.uint8)
    keys_out = cuda.device_array(n, np.uint32)
    vals_in = cuda.to_device(np.arange(n, dtype=np.uint32)) if pairs else None
    vals_out = cuda.device_array(n, np.uint32) if pairs else None
    args = (_ptr(temp), nbytes.value, _ptr(d_keys), _ptr(keys_out))
    keep = (temp, d_keys, keys_out, vals_in, vals_out)  # the launch holds raw pointers: keep their owners alive

    if pairs:
        def launch(keep=keep):
            _check(dll.gpulab_cub_sort_pairs(*args, _ptr(vals_in), _ptr(vals_out), n), "SortPairs")
    else:
        def launch(keep=keep):
            _check(dll.gpulab_cub_sort_keys(*args, n), "SortKeys")
    return launch, keys_out, vals_out
