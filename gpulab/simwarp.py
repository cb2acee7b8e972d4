"""Warp intrinsics for numba's CUDA simulator, so every numba variant runs without a GPU.

numba's simulator runs each CUDA thread as a Python thread and implements ``syncthreads``, but
none of the warp-level intrinsics (``shfl_*_sync``, ``ballot_sync``, ``match_any_sync`` ...).
This module adds them to the simulator's fake ``cuda`` module. Each call is a rendezvous of
the lanes named in ``mask`` (that exist in the block): every lane deposits its value, waits at a
barrier, reads what the others deposited, and waits again — the convergence the hardware gives
a ``*_sync`` intrinsic. So a kernel's *logic* (lane arithmetic, masks, shuffles) is checked on
the CPU exactly as written; speed, of course, is not.

It is installed when `gpulab` is imported on the simulator (``GPULAB_SIM_WARP=0`` turns it
off). The same import also replaces the simulator's ``cuda.shared.array``, whose race could
give two threads of one block two arrays ([`fix_shared_arrays`][gpulab.simwarp.fix_shared_arrays];
always, since it changes no result but a wrong one). What the intrinsics cannot imitate:

* ``activemask()`` returns the lanes that exist in the warp, not those that are converged at
  the call (the simulator has no notion of divergence); kernels in this book call it only where
  the whole warp is present.
* Types are imitated where they change results: numba-cuda types the masks of ``ballot_sync``
  and ``match_any_sync`` as *signed* int32 (CUDA C's are unsigned), so here they are
  ``numpy.int32`` too, and ``popc`` counts the bits of its argument's own width (32 for
  int32, 64 for int64 and Python ints). Mixed with a uint32, a mask with lane 31 set widens to
  int64 with its sign copied into the high 32 bits, on the GPU and here alike: ``popc`` then
  counts 32 lanes too many. Chapter 4's ballot ranking hit exactly that on the H200.
* A lane that calls an intrinsic with a mask naming a lane that never makes the same call
  waits for it; after ``TIMEOUT_S`` seconds the barrier breaks and the kernel raises
  ``BrokenBarrierError`` (on a GPU that is undefined behaviour, often a hang).
"""

from __future__ import annotations

import os
import sys
import threading
import weakref

import numpy as np

TIMEOUT_S = 120.0
FULL = 0xFFFFFFFF
INTRINSICS = ("shfl_sync", "shfl_up_sync", "shfl_down_sync", "shfl_xor_sync", "ballot_sync", "match_any_sync",
              "match_all_sync", "all_sync", "any_sync", "eq_sync", "activemask", "lanemask_lt", "syncwarp", "popc")

_lock = threading.Lock()
_by_block: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # BlockManager -> {(warp, mask): _Rendezvous}
_installed = False
_kernelapi = None  # numba-cuda's simulator module, once fix_shared_arrays ran
_numba_shared_array = None  # the method fix_shared_arrays replaced


class _Rendezvous:
    """One exchange point for the lanes of ``mask`` in one warp of one block."""

    def __init__(self, parties: int):
        self.barrier = threading.Barrier(parties)
        self.values: dict[int, object] = {}


def _lane_info():
    t = threading.current_thread()
    manager = t._manager
    bx, by, bz = manager._block_dim
    nthreads = bx * by * bz
    warp, lane = divmod(t.thread_id, 32)
    present = min(32, nthreads - 32 * warp)  # lanes of this warp that exist (a partial last warp)
    return manager, warp, lane, (1 << present) - 1 if present < 32 else FULL


def _exchange(mask: int, value):
    """Deposit ``value``; return ``(values by lane, my lane)`` once every lane in ``mask`` has."""
    manager, warp, lane, present = _lane_info()
    mask = int(mask) & present
    if not (mask >> lane) & 1:
        raise RuntimeError(f"lane {lane} called a warp intrinsic with a mask (0x{mask:08x}) that excludes it")
    key = (warp, mask)
    with _lock:
        per_block = _by_block.setdefault(manager, {})
        rv = per_block.get(key)
        if rv is None:
            rv = per_block[key] = _Rendezvous(bin(mask).count("1"))
    rv.values[lane] = value
    rv.barrier.wait(TIMEOUT_S)
    values = dict(rv.values)
    rv.barrier.wait(TIMEOUT_S)  # nobody may overwrite values before everyone has read them
    return values, lane


# --------------------------------------------------------------------------- the intrinsics
# Signatures follow numba.cuda's; ``self`` is the simulator's fake cuda module.


def shfl_sync(self, mask, value, src_lane):
    vals, lane = _exchange(mask, value)
    return vals.get(int(src_lane) % 32, value)


def shfl_up_sync(self, mask, value, delta):
    vals, lane = _exchange(mask, value)
    src = lane - int(delta)
    return vals.get(src, value) if src >= 0 else value


def shfl_down_sync(self, mask, value, delta):
    vals, lane = _exchange(mask, value)
    src = lane + int(delta)
    return vals.get(src, value) if src < 32 else value


def shfl_xor_sync(self, mask, value, lane_mask):
    vals, lane = _exchange(mask, value)
    return vals.get(lane ^ int(lane_mask), value)


def _int32_mask(bits: int) -> np.int32:
    """A lane mask as numba-cuda types it: int32, so lane 31 is the sign bit."""
    return np.int32(bits - (1 << 32) if bits >> 31 else bits)


def ballot_sync(self, mask, predicate):
    vals, _ = _exchange(mask, bool(predicate))
    return _int32_mask(sum(1 << j for j, v in vals.items() if v))


def match_any_sync(self, mask, value):
    vals, lane = _exchange(mask, value)
    mine = vals[lane]
    return _int32_mask(sum(1 << j for j, v in vals.items() if v == mine))


def match_all_sync(self, mask, value):
    vals, lane = _exchange(mask, value)
    same = all(v == vals[lane] for v in vals.values())
    return _int32_mask(sum(1 << j for j in vals) if same else 0), same


def popc(self, value):
    """Set bits of ``value`` at its compiled width (the simulator's own popc counts the bits
    of a negative number's magnitude)."""
    width = value.dtype.itemsize * 8 if isinstance(value, np.integer) else 64
    return bin(int(value) & ((1 << width) - 1)).count("1")


def all_sync(self, mask, predicate):
    vals, _ = _exchange(mask, bool(predicate))
    return int(all(vals.values()))


def any_sync(self, mask, predicate):
    vals, _ = _exchange(mask, bool(predicate))
    return int(any(vals.values()))


def eq_sync(self, mask, predicate):
    vals, _ = _exchange(mask, bool(predicate))
    return int(len(set(vals.values())) == 1)


def activemask(self):
    return _lane_info()[3]


def lanemask_lt(self):
    return (1 << _lane_info()[2]) - 1


def syncwarp(self, mask=FULL):
    _exchange(mask, None)


# --------------------------------------------------------------------------- cache hints


def ldcs(self, array, i):
    """``cuda.ldcs`` (a load with the evict-first cache hint, ``ld.global.cs``): the simulator
    has no cache, so it is the element itself (numba-cuda's simulator leaves the name ``None``)."""
    return array[i]


def add_cache_hints() -> None:
    """Give the simulator's fake ``cuda`` module `ldcs` (idempotent; whatever
    ``GPULAB_SIM_WARP`` says, like `fix_shared_arrays`: a hint changes no result)."""
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    FakeCUDAModule.ldcs = ldcs


# --------------------------------------------------------------------------- shared arrays


def _shared_array(self, shape, dtype, alignment=None):
    """``cuda.shared.array`` of the simulator, with its race removed. numba-cuda's version looks
    the block's array up by the caller's file and line, and creates it when it is missing, in two
    steps; a thread switch between them lets two threads of one block each create an array, and
    then they do not share memory: a thread reads its own uninitialised copy (seen in CI as a
    scan whose last block added a garbage offset, 2026-11-27). Here the array is created with one
    `dict.setdefault`, which the GIL makes atomic; the caller is found with `sys._getframe`
    instead of formatting the whole stack on every call."""
    if alignment is not None:
        raise RuntimeError("Array alignment is not supported in cudasim")
    if isinstance(dtype, _kernelapi.types.Type):  # the simulator's own types and conversion
        dtype = _kernelapi.numpy_support.as_dtype(dtype)
    if shape == 0:  # dynamic shared memory: one buffer shared by every such call
        count = self._dynshared_size // dtype.itemsize
        return np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
    caller = sys._getframe(1)
    key = (caller.f_code.co_filename, caller.f_lineno)
    res = self._allocations.get(key)
    if res is None:
        res = self._allocations.setdefault(key, np.empty(shape, dtype))
    return res


def fix_shared_arrays() -> None:
    """Replace the simulator's ``cuda.shared.array`` by `_shared_array`
    (idempotent; on the simulator whatever ``GPULAB_SIM_WARP`` says: it fixes a race, it adds nothing)."""
    global _kernelapi, _numba_shared_array
    from numba.cuda.simulator import kernelapi

    _kernelapi = kernelapi
    if kernelapi.FakeCUDAShared.array is not _shared_array:
        _numba_shared_array = kernelapi.FakeCUDAShared.array  # numba-cuda's own (the tests force its race)
    kernelapi.FakeCUDAShared.array = _shared_array


# --------------------------------------------------------------------------- installation


def enabled_by_environment() -> bool:
    return os.environ.get("GPULAB_SIM_WARP", "1").strip() not in ("0", "off", "false", "no")


def install() -> None:
    """Add the intrinsics to the simulator's fake cuda module (idempotent)."""
    global _installed
    from numba.cuda.simulator.kernelapi import FakeCUDAModule

    g = globals()
    for name in INTRINSICS:
        setattr(FakeCUDAModule, name, g[name])
    _installed = True


def installed() -> bool:
    """True when warp intrinsics work here: a real GPU, or the simulator with this shim."""
    from gpulab import device

    return not device.on_simulator() or _installed
